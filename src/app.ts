// The whole application as one Fastify instance. Tests build exactly this; server.ts only launches it.
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { serializerCompiler, validatorCompiler } from '@fastify/type-provider-zod';
import { setMaxListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { AppConfig } from './config.js';
import { errors, isRftError, RftError } from './errors.js';
import { Authenticator, loadOrCreateLocalKey, type Credential } from './authentication/authenticator.js';
import { loadRegistry, type Registry } from './registry/loader.js';
import { GradingService } from './grading/service.js';
import { Ledger } from './ledger/ledger.js';
import type { SandboxProvider } from './ledger/sandbox-provider.js';
import { createStore } from './store/index.js';
import type { Store } from './store/types.js';
import { createSandboxProvider } from './sandbox/provider.js';
import toolRoutes from './routes/tools.js';
import graderRoutes from './routes/graders.js';
import discoveryRoutes from './routes/discovery.js';
import rolloutRoutes from './routes/rollouts.js';
import healthRoutes from './routes/health.js';
import { connectRedis, type Redis } from './http/redis.js';

export interface Services {
  config: AppConfig;
  store: Store;
  registry: Registry;
  ledger: Ledger;
  grading: GradingService;
  sandboxes: SandboxProvider | undefined;
  auth: Authenticator;
  /** Set when the key was generated into the data dir (no credential configured). */
  localKey: { key: string; created: boolean; path: string } | undefined;
  shutdown: AbortController;
  startedAt: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    rft: Services;
  }
  interface FastifyRequest {
    rawBody?: Buffer;
    credential?: Credential;
  }
  interface FastifyContextConfig {
    /** Route needs no credential (health checks). */
    public?: boolean;
  }
}

export interface BuildOptions {
  logger?: FastifyServerOptions['logger'] | Logger;
  /** Pre-built registry (tests); otherwise loaded from the configured folders. */
  registry?: Registry;
}

export async function buildApp(config: AppConfig, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const loggerOpt =
    opts.logger && typeof (opts.logger as Logger).child === 'function'
      ? { loggerInstance: opts.logger as Logger }
      : {
          logger: opts.logger ?? {
            level: config.logLevel,
            redact: { paths: ['req.headers.authorization', 'req.headers["webhook-signature"]', '*.apiKey', '*.key'], censor: '[redacted]' },
          },
        };
  const app = Fastify({
    ...(loggerOpt as FastifyServerOptions),
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    // The trainer allows 10 minutes per tool call; leave room for the reply.
    requestTimeout: 11 * 60_000,
    connectionTimeout: 0,
    keepAliveTimeout: 75_000,
    return503OnClosing: true,
    // One line per tool call and grade (with trace_id) is logged by the routes; generic request lines only when debugging.
    logController: new LogController({ disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace' }),
    requestIdHeader: 'x-request-id',
    // A silent logger needs no per-request child (it would only carry the request id).
    childLoggerFactory: (logger, bindings, childOpts) => (logger.level === 'silent' ? logger : logger.child(bindings, childOpts)),
    ...(config.tls ? { https: { cert: readFileSync(config.tls.cert), key: readFileSync(config.tls.key) } } : {}),
  }) as unknown as FastifyInstance;
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  const store = await createStore(config, config.instanceId, {
    onIdleError: (err) => app.log.warn({ err }, 'idle store connection failed; the pool replaces it'),
  });
  const shutdown = new AbortController();
  // Every in-flight call that uses ctx.signal listens to it: hundreds at once is normal.
  setMaxListeners(0, shutdown.signal);
  let localKey: Services['localKey'];
  const keys = [...config.apiKeys];
  if (keys.length === 0 && config.signingSecrets.length === 0 && config.autoKey) {
    localKey = loadOrCreateLocalKey(config.dataDir);
    keys.push({ label: 'local', key: localKey.key });
  }
  const auth = new Authenticator(keys, config.signingSecrets, store);
  let registry: Registry;
  let sandboxes: SandboxProvider | undefined;
  // Rate limits shared by every replica when RFT_REDIS_URL is set; counted in this process otherwise.
  let redis: Redis | undefined;
  try {
    if (config.rateLimit.max > 0 && config.rateLimit.redisUrl) redis = await connectRedis(config.rateLimit.redisUrl, app.log as unknown as Logger);
    registry =
      opts.registry ??
      (await loadRegistry({ toolsDir: config.toolsDir, gradersDir: config.gradersDir, jsonGraderOptions: { openai: config.openai } }));
    sandboxes = await createSandboxProvider(config, app.log as unknown as Logger);
  } catch (e) {
    // A boot that stops here must not leave the store (its threads, its pool) or Redis open.
    redis?.disconnect();
    await store.close();
    throw e;
  }
  const ledger = new Ledger({
    store,
    sandboxes,
    defaultBudget: config.toolBudget,
    defaultTimeoutMs: config.toolTimeoutMs,
    defaultMaxOutputBytes: config.maxOutputBytes,
    log: app.log as unknown as Logger,
    shutdown: shutdown.signal,
  });
  const grading = new GradingService({
    store,
    ledger,
    sandboxes,
    defaultBudget: config.toolBudget,
    timeoutMs: config.graderTimeoutMs,
    templatesRoot: config.sandbox.templatesRoot,
    log: app.log as unknown as Logger,
    shutdown: shutdown.signal,
  });
  const interrupted = await ledger.markInterruptedAtBoot();
  if (interrupted > 0) app.log.warn({ interrupted }, 'calls left running by a previous process were marked interrupted');

  app.decorate('rft', { config, store, registry, ledger, grading, sandboxes, auth, localKey, shutdown, startedAt: Date.now() });
  app.addHook('onClose', async () => {
    shutdown.abort(new Error('server shutting down'));
    await sandboxes?.close();
    await redis?.quit().catch(() => redis?.disconnect());
    await store.close();
  });

  // Keep the exact bytes: signatures are computed over the raw body. A body that could carry a
  // __proto__ key (spelled out or with \u escapes) goes through Fastify's own parser
  // (secure-json-parse), which refuses it; any other body is plain JSON.parse, which is all that
  // parser does for it anyway, minus its regex scan of the whole body.
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  const refuse = () => errors.badRequest('request body is not valid JSON (or carries a __proto__ key)');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body: Buffer, done) => {
    req.rawBody = body;
    if (body.length === 0) return done(null, undefined);
    const text = body.toString('utf8');
    if (text.indexOf('__proto__') === -1 && text.indexOf('\\u') === -1) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return done(refuse(), undefined);
      }
      return done(null, value);
    }
    void parseJson(req, text, (err: Error | null, value?: unknown) => (err ? done(refuse(), undefined) : done(null, value)));
  });

  // Callback style: a key is checked without a promise; only a signature waits on the store.
  app.addHook('preValidation', (req, _reply, done) => {
    if (req.routeOptions.config.public) return done();
    let credential: Credential | Promise<Credential>;
    try {
      credential = auth.authenticate(req.headers, req.rawBody);
    } catch (e) {
      return done(e as Error);
    }
    if (credential instanceof Promise) {
      credential.then((c) => {
        req.credential = c;
        done();
      }, done);
    } else {
      req.credential = credential;
      done();
    }
  });

  if (config.rateLimit.max > 0) {
    await app.register(rateLimit, {
      ...(redis ? { redis, nameSpace: 'rft-endpoints:rate-limit:', skipOnError: true } : {}),
      global: true,
      hook: 'preHandler',
      max: config.rateLimit.max,
      timeWindow: config.rateLimit.windowMs,
      keyGenerator: (req) => req.credential?.label ?? `ip:${req.ip}`,
      allowList: (req) => req.routeOptions.config.public === true,
      errorResponseBuilder: (_req, ctx) => errors.rateLimited(Math.ceil(ctx.ttl / 1000)),
    });
  }

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string; validation?: unknown }, req, reply) => {
    let e: RftError;
    if (isRftError(err)) e = err;
    else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') e = errors.bodyTooLarge(config.bodyLimitBytes);
    else if (err.validation || err.code === 'FST_ERR_VALIDATION') e = errors.badRequest(err.message);
    else if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) e = errors.badRequest(err.message);
    else e = errors.internal('internal error');
    if (e.statusCode >= 500) req.log.error({ err }, 'request failed');
    else req.log.info({ code: e.code, status: e.statusCode }, e.message);
    void reply.status(e.statusCode).send(e.toJSON());
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.status(404).send(errors.notFound(`route ${req.method} ${req.url.split('?')[0]}`).toJSON());
  });

  await app.register(healthRoutes);
  await app.register(toolRoutes);
  await app.register(graderRoutes);
  await app.register(discoveryRoutes);
  await app.register(rolloutRoutes);
  return app;
}
