// The whole application as one Fastify instance. Tests build exactly this; server.ts only launches it.
import { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler } from '@fastify/type-provider-zod';
import { setMaxListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { isLoopback, type AppConfig } from './config.js';
import type { RftError } from './errors.js';
import { Authenticator, loadOrCreateLocalKey, type Credential, type PendingSignature } from './authentication/authenticator.js';
import { FailureLimiter } from './authentication/failure-limiter.js';
import { registerAuthentication } from './authentication/hooks.js';
import { defaultMaxConnections, splitConnections, type ConnectionGuard } from './http/connections.js';
import { registerErrorReplies } from './http/error-replies.js';
import { buildListener } from './http/listener.js';
import { registerBodyErrors, registerJsonBody } from './http/json-body.js';
import { registerRateLimit } from './http/rate-limit.js';
import { connectRedis, type Redis } from './http/redis.js';
import { ID_MAX_LENGTH } from './protocol/wire.js';
import { loadRegistry, pythonToolFiles, type Registry } from './registry/loader.js';
import { GradingService } from './grading-service/service.js';
import { Ledger } from './ledger/ledger.js';
import type { SandboxProvider } from './sandbox/provider.js';
import { createStore } from './store/index.js';
import type { Store } from './store/types.js';
import { createSandboxProvider } from './sandbox/provider.js';
import { loadMcpConfig, McpBridge, mcpWorkRoot, withPythonTools } from './mcp/index.js';
import mcpRoutes from './doors/mcp/serve.js';
import toolRoutes from './doors/agent-rft/tools.js';
import graderRoutes from './doors/agent-rft/graders.js';
import discoveryRoutes from './doors/agent-rft/discovery.js';
import rolloutRoutes from './routes/rollouts.js';
import healthRoutes from './routes/health.js';
import metricsRoutes from './routes/metrics.js';
import statsRoutes from './stats/route.js';
import dashboardRoutes from './routes/dashboard.js';
import { registerOpenApi } from './routes/openapi.js';
import { Metrics } from './metrics/metrics.js';
import { failureOfHttp } from './metrics/outcomes.js';
import { startMetricsListener, type MetricsListener } from './http/metrics-listener.js';
import { IntegrityFlags } from './integrity/flags.js';
import { sandboxObserver } from './integrity/observer.js';
import { loadEnvironments } from './environments/load.js';
import { HARBOR_GRADER } from './harbor/environment.js';
import { harborGrader } from './harbor/grader.js';
import { HarborTasks } from './harbor/registry.js';
import { verifyHarborTask } from './harbor/verify.js';
import type { SandboxImage } from './sandbox/types.js';
import type { Environments } from './environments/environment.js';
import { DoorCore } from './doors/core.js';
import { buildNemoGymApp } from './doors/nemo-gym/app.js';
import { buildPrivateApp, checkShadowing } from './doors/private/app.js';
import { doorListenerSettings, listenDoor } from './doors/listen.js';
import { registerOrsDoor } from './doors/ors/app.js';

export interface Services {
  config: AppConfig;
  store: Store;
  registry: Registry;
  ledger: Ledger;
  grading: GradingService;
  sandboxes: SandboxProvider | undefined;
  /** The MCP servers of mcp.json bridged as tools, when there is one. */
  mcp: McpBridge | undefined;
  auth: Authenticator;
  connections: ConnectionGuard;
  /** Set when the key was generated into the data dir (no credential configured). */
  localKey: { key: string; created: boolean; path: string } | undefined;
  shutdown: AbortController;
  startedAt: number;
  /** Undefined with RFT_METRICS=false. */
  metrics: Metrics | undefined;
  integrity: IntegrityFlags;
  /** The credential-free /metrics listener, once the app is ready (RFT_METRICS_PORT). */
  metricsListener: MetricsListener | undefined;
  /** Environments: named tools, grader and dataset splits (src/environments). */
  environments: Environments;
  /** What every door calls (src/doors/core.ts). */
  core: DoorCore;
  /** The NeMo Gym door's listener, once the app is ready (RFT_NEMO_GYM_PORT). */
  nemoGym: { app: FastifyInstance; url: string } | undefined;
  /** The private listener (OpenEnv, reward, SandboxFusion doors), once the app is ready (RFT_PRIVATE_PORT). */
  privateDoors: { app: FastifyInstance; url: string } | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    rft: Services;
  }
  interface FastifyRequest {
    rawBody?: Buffer;
    /** A body the parser refused, answered after authentication. */
    bodyError?: RftError;
    /** The part of the body replaced by null because it nested too deep. */
    cutFromBody?: string;
    /** The code of the error this request was answered with. */
    errorCode?: string;
    /** The failure was counted where it happened (an un-begun tool call): the reply does not count it again. */
    failureCounted?: boolean;
    credential?: Credential;
    pendingSignature?: PendingSignature;
  }
  interface FastifyContextConfig {
    /** Route needs no credential (health checks). */
    public?: boolean;
    /** The trainer calls this route (tools, graders): a 4xx is shown to the model, so limits answer 503. */
    trainer?: boolean;
    /** A grade: a sample.output_json nested too deep is cut to null instead of refusing the body. */
    cutDeepOutputJson?: boolean;
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
            redact: {
              paths: [
                ...[...new Set(['authorization', ...config.apiKeyHeaders.map((h) => h.toLowerCase())])].map((h) => `req.headers["${h}"]`),
                'req.headers["webhook-signature"]',
                '*.apiKey',
                '*.key',
              ],
              censor: '[redacted]',
            },
          },
        };
  const limits = { bodyLimitBytes: config.bodyLimitBytes, maxParamLength: ID_MAX_LENGTH };
  const shares = splitConnections(config.connections.max || defaultMaxConnections(), {
    'nemo-gym': config.nemoGym.port !== undefined ? config.nemoGym.maxConnections : undefined,
    private: config.private.port !== undefined ? config.private.maxConnections : undefined,
    metrics: config.metrics.port !== undefined ? config.metrics.maxConnections : undefined,
  });
  const { app, connections } = buildListener({
    name: 'main',
    fastify: {
      ...(loggerOpt as FastifyServerOptions),
      trustProxy: config.trustProxy,
      // One line per tool call and grade (with trace_id) is logged by the routes; generic request lines only when debugging.
      logController: new LogController({ disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace' }),
      requestIdHeader: 'x-request-id',
      // A silent logger needs no per-request child (it would only carry the request id).
      childLoggerFactory: (logger, bindings, childOpts) => (logger.level === 'silent' ? logger : logger.child(bindings, childOpts)),
    },
    bodyLimitBytes: config.bodyLimitBytes,
    // Every id the server accepts can be named in a URL (GET/DELETE /v1/rollouts/{trace_id}).
    maxParamLength: ID_MAX_LENGTH,
    headersTimeoutMs: config.connections.headersTimeoutMs,
    bodyTimeoutMs: config.connections.bodyTimeoutMs,
    maxConnections: shares.main,
    tls: config.tls ? { cert: readFileSync(config.tls.cert), key: readFileSync(config.tls.key) } : undefined,
    ownClosingReply: true,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  const store = await createStore(config, config.instanceId, {
    onIdleError: (err) => app.log.warn({ err }, 'idle store connection failed; the pool replaces it'),
    log: app.log as unknown as Logger,
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
  const auth = new Authenticator(keys, config.signingSecrets, store, { keyHeaders: config.apiKeyHeaders });
  const log = app.log as unknown as Logger;
  let registry: Registry;
  let sandboxes: SandboxProvider | undefined;
  // Rate limits shared by every replica when RFT_REDIS_URL is set; counted in this process otherwise.
  let redis: Redis | undefined;
  let metrics: Metrics | undefined;
  let integrity: IntegrityFlags;
  let mcp: McpBridge | undefined;
  let environments: Environments;
  try {
    if (config.rateLimit.max > 0 && config.rateLimit.redisUrl) redis = await connectRedis(config.rateLimit.redisUrl, app.log as unknown as Logger);
    registry =
      opts.registry ??
      (await loadRegistry({
        toolsDir: config.toolsDir,
        gradersDir: config.gradersDir,
        jsonGraderOptions: { openai: config.openai },
        typecheck: config.unitsTypecheck ? { dataDir: config.dataDir } : undefined,
      }));
    if (registry.typecheck) log.info({ typecheck: registry.typecheck }, `units type-checked (${registry.typecheck.outcome}, ${registry.typecheck.ms} ms)`);
    if (config.metrics.enabled) {
      metrics = new Metrics({ graderRanges: [...registry.graders.values()].map((g) => g.range) });
      metrics.declare([...registry.tools.keys()], [...registry.graders.keys()]);
    }
    integrity = new IntegrityFlags({ store, metrics, log });
    // tools/*.py: FastMCP servers the bridge runs like mcp.json's, with no entry written for them.
    const mcpConfig = withPythonTools(
      loadMcpConfig(config.mcpConfig.path, config.mcpConfig.required, config.mcpConfig.startTimeoutMs),
      await pythonToolFiles(config.toolsDir),
      dirname(config.toolsDir),
      config.mcpConfig.startTimeoutMs,
    );
    // Filled when the environments load (below), asked by the sandbox side for a row's `sandbox.harbor` task.
    const harborTasks = new HarborTasks();
    sandboxes = await createSandboxProvider(config, log, {
      harborTasks: harborTasks.lookup,
      observer: sandboxObserver(metrics, integrity),
      readOnlyMounts: McpBridge.readOnlyMounts(mcpConfig),
      prestarts: McpBridge.prestarts(mcpConfig, config.maxOutputBytes),
      ...(store.replicas ? { placements: store.replicas.placements } : {}),
      history: store,
    });
    if (sandboxes && metrics) metrics.watchSandboxes(() => sandboxes!.stats());
    if (mcpConfig) {
      const bridge = await McpBridge.start(mcpConfig, {
        sandboxes,
        log: log.child({ component: 'mcp' }),
        inheritedEnv: config.mcpInheritedEnv,
        workRoot: mcpWorkRoot(config.dataDir),
        defaultTimeoutMs: config.toolTimeoutMs,
        defaultMaxOutputBytes: config.maxOutputBytes,
      });
      mcp = bridge;
      bridge.register(registry);
      metrics?.declare(bridge.tools.map((t) => t.def.name), []);
      sandboxes?.onRolloutEnd((traceId) => bridge.endRollout(traceId));
    }
    // The project (where tools/ and graders/ were loaded from) serves its units unless its job.json names others.
    environments = loadEnvironments(config.environmentsDirs, registry, log, { dirs: [dirname(config.toolsDir), dirname(config.gradersDir)], defaultGrader: config.defaultGrader }, {
      tasks: harborTasks,
      grader: () => {
        metrics?.declare([], [HARBOR_GRADER]);
        const provider = sandboxes;
        return harborGrader({
          tasks: harborTasks.lookup,
          verify: (sandbox, task, run) =>
            verifyHarborTask(sandbox, task, {
              signal: run.signal,
              // Separate verifier mode: a fresh container of the verifier's image, owned by this grading run.
              ...(provider ? { freshSandbox: (image: SandboxImage) => provider.createEphemeral({ traceId: run.traceId, image }, run.signal) } : {}),
            }),
        });
      },
    });
  } catch (e) {
    // A boot that stops here must not leave the store (its threads, its pool), Redis, MCP servers or sandboxes open.
    redis?.disconnect();
    await mcp?.close();
    await sandboxes?.close();
    await store.close();
    throw e;
  }
  const ledger = new Ledger({
    store,
    sandboxes,
    defaultBudget: config.toolBudget,
    defaultTimeoutMs: config.toolTimeoutMs,
    defaultMaxOutputBytes: config.maxOutputBytes,
    maxJsonDepth: config.maxJsonDepth,
    log,
    shutdown: shutdown.signal,
    metrics,
    integrity,
    serialTools: () => [...registry.tools.values()].filter((t) => t.def.serial).map((t) => t.def.name),
    idempotentTools: () => [...registry.tools.values()].filter((t) => t.def.idempotent).map((t) => t.def.name),
  });
  const grading = new GradingService({
    store,
    sandboxes,
    defaultBudget: config.toolBudget,
    timeoutMs: config.graderTimeoutMs,
    templatesRoot: config.sandbox.templatesRoot,
    log,
    shutdown: shutdown.signal,
    metrics,
    integrity,
  });
  // At boot, not when the listener starts: a name its doors' routes would shadow is a configuration error.
  if (config.private.port !== undefined) checkShadowing(environments);
  const core = new DoorCore({
    registry, ledger, grading, store, sandboxes, environments, defaultBudget: config.toolBudget, defaultGrader: config.defaultGrader, log,
    limits: { maxBytes: config.bodyLimitBytes, maxDepth: config.maxJsonDepth },
  });
  // A door that announces its rollouts starts their sandboxes ahead; their MCP instances start with them.
  if (mcp) {
    const bridge = mcp;
    core.onSandboxReady((r, sandbox) => bridge.warmRollout(r.traceId, r.tools, sandbox));
  }
  const interrupted = await ledger.markInterruptedAtBoot();
  if (interrupted > 0) app.log.warn({ interrupted }, 'calls left running by a previous process were marked interrupted');

  const services: Services = {
    config, store, registry, ledger, grading, sandboxes, mcp, auth, connections, localKey, shutdown, startedAt: Date.now(), metrics, integrity, metricsListener: undefined,
    environments, core, nemoGym: undefined, privateDoors: undefined,
  };
  app.decorate('rft', services);
  // onReady, not onListen: listen() waits for it, so the listener is up when the server is.
  app.addHook('onReady', async () => {
    if (metrics && config.metrics.port !== undefined && !services.metricsListener) {
      services.metricsListener = await startMetricsListener(metrics, config.metrics.host, config.metrics.port, doorListenerSettings(config, 'metrics', shares['metrics']));
      app.log.info({ url: services.metricsListener.url }, 'metrics listener (no credentials) ready');
    }
    if (config.nemoGym.port !== undefined && !services.nemoGym) {
      const door = await buildNemoGymApp({
        core, log, bodyLimitBytes: config.bodyLimitBytes, sessionTtlMs: config.sandbox.ttlMs, environment: config.nemoGym.environment,
        mcp: config.nemoGym.mcp ? { registry, ledger } : undefined,
        listener: doorListenerSettings(config, 'nemo-gym', shares['nemo-gym']),
      });
      services.nemoGym = { app: door, url: await listenDoor(door, config.nemoGym.host, config.nemoGym.port) };
      if (!isLoopback(config.nemoGym.host)) {
        app.log.warn(
          { host: config.nemoGym.host, allowed_hosts: config.nemoGym.allowedHosts },
          'the NeMo Gym door listens beyond loopback: it answers to loopback names, its own address and RFT_NEMO_GYM_ALLOWED_HOSTS (the name the trainers call it by)',
        );
      }
      app.log.info({ url: services.nemoGym.url }, 'NeMo Gym door (no credentials: keep it on the trainers\' network) ready');
    }
    if (config.private.port !== undefined && !services.privateDoors) {
      const door = await buildPrivateApp(
        { core, config, environments, registry, ledger, grading, store, sandboxes, log }, config.bodyLimitBytes, undefined, doorListenerSettings(config, 'private', shares.private),
      );
      services.privateDoors = { app: door, url: await listenDoor(door, config.private.host, config.private.port) };
      if (!isLoopback(config.private.host)) {
        app.log.warn(
          { host: config.private.host, allowed_hosts: config.private.allowedHosts },
          'the private listener takes no credential and listens beyond loopback: keep it on the trainers\' private network only. It answers to loopback names, its own address and RFT_PRIVATE_ALLOWED_HOSTS (the name the trainers call it by)',
        );
      }
      app.log.info({ url: services.privateDoors.url }, 'private listener (no credentials: keep it on the trainers\' network) ready');
    }
  });
  app.addHook('onClose', async () => {
    shutdown.abort(new Error('server shutting down'));
    await services.metricsListener?.close();
    await services.nemoGym?.app.close();
    await services.privateDoors?.app.close();
    await mcp?.close();
    await sandboxes?.close();
    await redis?.quit().catch(() => redis?.disconnect());
    await store.close();
  });
  if (metrics) {
    // Route templates, not URLs, as labels: bounded cardinality whatever the callers send.
    app.addHook('onResponse', (req, reply, done) => {
      metrics.http(req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
      // (a health probe's 503 is not a failure of a request: the store's own are counted where they happen)
      const failure = req.routeOptions.config?.public || req.failureCounted ? null : failureOfHttp(reply.statusCode, req.errorCode);
      if (failure) metrics.failure(failure);
      done();
    });
  }

  // Hook order matters: the closing 503, then authentication (keys before the body is read), then
  // a body the parser refused, then the rate limit.
  registerErrorReplies(app, limits);
  registerJsonBody(app, config.maxJsonDepth);
  const failures = config.authFailures.max > 0 ? new FailureLimiter(config.authFailures) : undefined;
  registerAuthentication(app, { auth, failures, onAuthenticated: (req) => connections.trust(req.raw.socket) });
  registerBodyErrors(app);
  await registerRateLimit(app, config.rateLimit, redis);

  await registerOpenApi(app);
  await registerOrsDoor(app);
  await app.register(healthRoutes);
  await app.register(toolRoutes);
  await app.register(graderRoutes);
  await app.register(discoveryRoutes);
  await app.register(rolloutRoutes);
  await app.register(metricsRoutes);
  await app.register(statsRoutes);
  await app.register(dashboardRoutes);
  await app.register(mcpRoutes);
  return app;
}
