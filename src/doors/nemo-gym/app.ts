// The NeMo Gym door: a resources server at the root of its own listener, as Gym's simple_agent and
// verifiers' nemo_gym toolset call it (docs/nemo-gym.md). It translates; the core (../core.ts) runs.
import { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { errors, isRftError } from '../../errors.js';
import { canonicalJson } from '../../protocol/canonical.js';
import type { DoorCore } from '../core.js';
import { answerOf, graderItem, rowTools, seedBodySchema, verifyBodySchema, type SeedBody, type VerifyBody } from './rows.js';
import { parseRunLabel, runOfHeaders, RUN_METADATA_KEY } from '../../protocol/run-label.js';
import { rewardComponents } from './reward.js';
import { Sessions, traceIdOf, type Session } from './sessions.js';
import type { Registry } from '../../registry/loader.js';
import type { Ledger } from '../../ledger/ledger.js';
import { doorMcp } from '../mcp/serve.js';
import { createToolServer, type RolloutScope } from '../mcp/server.js';
import { buildListener } from '../../http/listener.js';
import type { DoorListenerSettings } from '../listen.js';

export const NEMO_GYM_DOOR = 'nemo-gym';
/** The session cookie (Gym's own servers name theirs after the server class; any name works for its client). */
export const SESSION_COOKIE = 'rft_nemo_gym_session';
const ROLLOUT_PREFIX = /^\/ng-rollout\/([^/?]{1,200})(\/.*)$/;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** Gym's header for an MCP call's session (nemo_gym/base_resources_server.py NEMO_GYM_MCP_SESSION_TOKEN_HEADER). */
export const MCP_TOKEN_HEADER = 'X-NeMo-Gym-Session-Token';
/** The seed reply's MCP server name: agents namespace its tools as mcp__<name>__<tool>. */
export const MCP_SERVER_NAME = 'rft_endpoints';

export interface NemoGymDoorOptions {
  core: DoorCore;
  log: Logger;
  bodyLimitBytes: number;
  /** How long a session outlives its last request (the sandbox TTL: the rollout ends by it when /verify never comes). */
  sessionTtlMs: number;
  /** Every rollout's environment; unset, the row's tools decide. */
  environment?: string | undefined;
  /** Serve the rollout's tools over /mcp too (Gym's expose_tools_over_mcp): the seed reply names it. */
  mcp?: { registry: Registry; ledger: Ledger } | undefined;
  /** Its listener's timeouts, connection share, Host and Origin rules (../listen.ts doorListenerSettings). */
  listener: DoorListenerSettings;
}

interface DoorRequest {
  token?: string;
  rolloutId?: string;
}
const state = new WeakMap<FastifyRequest['raw'], DoorRequest>();
const of = (req: FastifyRequest): DoorRequest => {
  let s = state.get(req.raw);
  if (!s) state.set(req.raw, (s = {}));
  return s;
};

function cookieToken(header: string | undefined): string | undefined {
  for (const part of header?.split(';') ?? []) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function parseJson(body: unknown): { ok: true; value: unknown; raw: string } | { ok: false; raw: string } {
  const raw = Buffer.isBuffer(body) ? body.toString('utf8') : '';
  try {
    return { ok: true, value: raw === '' ? {} : (JSON.parse(raw) as unknown), raw };
  } catch {
    return { ok: false, raw };
  }
}

export async function buildNemoGymApp(o: NemoGymDoorOptions): Promise<FastifyInstance> {
  // The listener every listener is (src/http/listener.ts): timeouts, its share of the connections, no
  // foreign Host or browser, and a rewrite that throws (a bad escape) answered 400.
  const { app } = buildListener({
    name: NEMO_GYM_DOOR,
    fastify: {
      loggerInstance: o.log.child({ door: NEMO_GYM_DOOR }),
      // One line per session, tool call and grade is logged by the routes (as on the main listener).
      logController: new LogController({ disableRequestLogging: true }),
    },
    bodyLimitBytes: o.bodyLimitBytes,
    ...o.listener,
    // Gym's observability prefixes every path with /ng-rollout/{id}/: stripped here, its id kept.
    rewriteUrl: (raw) => {
      const m = ROLLOUT_PREFIX.exec(raw.url ?? '/');
      if (!m) return raw.url ?? '/';
      state.set(raw, { rolloutId: decodeURIComponent(m[1]!) });
      return m[2]!;
    },
  });
  const sessions = new Sessions(o.sessionTtlMs);
  app.addHook('onClose', async () => sessions.close());

  // Bodies are kept as bytes: a tool's arguments go to the ledger as sent (its depth and JSON checks),
  // and a retry is told by its bytes.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.addHook('onRequest', async (req) => {
    const token = cookieToken(req.headers.cookie);
    if (token !== undefined && sessions.get(token)) of(req).token = token;
  });
  // The session's cookie on every reply, errors included: simple_agent replaces its cookies with
  // each reply's Set-Cookie, and a reply without one leaves its next call cookie-less.
  app.addHook('onSend', async (req, reply) => {
    const token = of(req).token;
    if (token !== undefined) void reply.header('set-cookie', `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax`);
  });
  // Every reply's error carries an RFT_ERR_* code: Fastify's own (a body over the limit, a bad content length) get ours.
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const e = isRftError(err)
      ? err
      : err.statusCode === 413
        ? errors.bodyTooLarge(o.bodyLimitBytes)
        : err.statusCode !== undefined && err.statusCode < 500
          ? errors.badRequest(err.message)
          : errors.internal('the NeMo Gym door failed');
    if (e.statusCode >= 500) req.log.error({ err }, 'nemo-gym door failed');
    void reply.code(e.statusCode).send(e.toJSON());
  });

  const session = (req: FastifyRequest): Session => {
    const s = sessions.get(of(req).token);
    if (s) return s;
    if (cookieToken(req.headers.cookie) !== undefined) throw errors.nemoGymSessionLost();
    throw errors.nemoGymSession('no session cookie');
  };

  // A tool call's failure of ours breaks the episode (/verify then answers 503), whichever wire it came by.
  const runTool = async (s: Session, key: string, name: string, args: unknown) => {
    try {
      return await o.core.callTool(s.rollout, key, name, args);
    } catch (e) {
      if (isRftError(e) && e.statusCode >= 500) s.broken ??= e;
      throw e;
    }
  };

  if (o.mcp) {
    // The token is the session's own (as the cookie): it names the rollout, whose tools alone are listed and callable.
    const tokenOf = (ctx: Parameters<RolloutScope['list']>[0]) => ctx.http?.req?.headers.get(MCP_TOKEN_HEADER) ?? undefined;
    const rollouts: RolloutScope = {
      list: (ctx) => sessions.get(tokenOf(ctx))?.rollout.tools ?? new Set(),
      resolve: (ctx) => {
        const token = tokenOf(ctx);
        if (token === undefined) throw errors.nemoGymSession(`no ${MCP_TOKEN_HEADER} header`);
        const s = sessions.get(token);
        // A token we minted and no longer hold, or never minted: our lost session, the rollout is rerun.
        if (!s) throw errors.nemoGymSessionLost();
        return { traceId: s.rollout.traceId, tools: s.rollout.tools, call: (key, name, args) => runTool(s, key, name, args) };
      },
    };
    const { registry, ledger } = o.mcp;
    const mcp = doorMcp(() => createToolServer({ registry, ledger, rollouts }), o.bodyLimitBytes);
    app.addHook('onClose', async () => mcp.close());
    // GET (a server-sent stream) and DELETE (end a session) get the stateless transport's 405, which clients expect.
    app.route({
      method: ['POST', 'GET', 'DELETE'],
      url: '/mcp',
      handler: async (req, reply) => {
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const parsed = parseJson(body);
        await mcp.handle(req, reply, body, parsed.ok ? parsed.value : undefined);
      },
    });
  }

  // ng_run counts a server ready when GET / answers.
  app.get('/', async () => ({ door: NEMO_GYM_DOOR }));
  // FastAPI's JSON string; reverify replays /verify without seed or cookie, which a stateful rollout cannot serve.
  app.get('/reverify_mode', async (_req, reply) => reply.type('application/json').send('"unsupported"'));
  app.post('/aggregate_metrics', async () => ({ group_level_metrics: [], agent_metrics: {}, key_metrics: {} }));

  app.post('/seed_session', async (req) => {
    const live = sessions.get(of(req).token);
    // A live session that has called tools and not been verified: this is the model calling a tool
    // named seed_session, which must not restart its rollout.
    if (live && live.seq > 0 && !live.verified) throw errors.nemoGymNotATool('seed_session');
    const body = parseJson(req.body);
    const parsed = body.ok ? seedBodySchema.safeParse(body.value) : undefined;
    if (!parsed?.success) throw live ? errors.nemoGymNotATool('seed_session') : errors.badRequest('the body is not a NeMo Gym row (responses_create_params with input)');
    const run = sessionRun(req.headers, parsed.data);
    const token = Sessions.mint();
    const row = graderItem(parsed.data);
    const rolloutId = of(req).rolloutId;
    if (rolloutId !== undefined && row._ng_rollout_id === undefined) row._ng_rollout_id = rolloutId;
    const rollout = await o.core.start({
      traceId: traceIdOf(token),
      door: NEMO_GYM_DOOR,
      row,
      tools: rowTools(parsed.data),
      environment: o.environment,
      warmSandbox: true,
      run,
    });
    sessions.add(token, rollout, canonicalJson(parsed.data.responses_create_params));
    of(req).token = token;
    req.log.info({ trace_id: rollout.traceId, environment: rollout.environment, ng_rollout_id: rolloutId }, 'nemo-gym session');
    // Gym's MCPServerMetadata (nemo_gym/base_resources_server.py), under the key its agents read.
    return o.mcp ? { mcp: { server_name: MCP_SERVER_NAME, url_path: '/mcp', transport: 'http', headers: { [MCP_TOKEN_HEADER]: token } } } : {};
  });

  app.post('/verify', async (req) => {
    const s = session(req);
    const body = parseJson(req.body);
    const parsed = body.ok ? verifyBodySchema.safeParse(body.value) : undefined;
    // Only Gym's own /verify carries the seeded row and an episode: anything else is the model's tool call named verify.
    if (!parsed?.success || canonicalJson(parsed.data.responses_create_params) !== s.params) throw errors.nemoGymNotATool('verify');
    // A failure of ours broke the episode: the trainer reruns the rollout (NeMo RL does, up to 5 times).
    if (s.broken) throw errors.nemoGymRolloutLost(s.broken.code);
    const echo = parsed.data as VerifyBody;
    try {
      const g = await o.core.grade(s.rollout, answerOf(echo));
      s.verified = true;
      req.log.info({ trace_id: s.rollout.traceId, grader: g.grader, score: g.score, replayed: g.replayed }, 'nemo-gym verify');
      return { ...echo, reward: g.score, reward_components: rewardComponents(g.grader, g.score, g.subscores) };
    } catch (e) {
      // Gym's judge convention (nemo_gym/judge.py): a grader that cannot grade is a 0 marked judge_failed, not a 5xx
      // that would abort the whole collection. Our own failures (store, sandbox capacity) stay 5xx: a rerun is right.
      if (!isRftError(e) || (e.code !== errors.graderFailed.code && e.code !== errors.graderBadScore.code)) throw e;
      s.verified = true;
      req.log.warn({ trace_id: s.rollout.traceId, err: e }, 'nemo-gym verify: grader failed (judge_failed)');
      return { ...echo, reward: 0, reward_components: { [s.rollout.grader.def.name]: 0 }, _ng_failure_class: 'judge_failed', _ng_failure_detail: e.code };
    }
  });

  app.post<{ Params: { tool: string } }>('/:tool', async (req, reply) => toolCall(req, reply, session(req), req.params.tool));

  async function toolCall(req: FastifyRequest, reply: FastifyReply, s: Session, name: string): Promise<string> {
    if (!TOOL_NAME.test(name) || !s.rollout.tools.has(name)) throw errors.unknownTool(name, [...s.rollout.tools]);
    const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
    const fingerprint = createHash('sha256').update(name).update('\0').update(raw).digest('base64url');
    const { key, replay, delivered } = sessions.keyFor(s, fingerprint);
    reply.raw.once('finish', delivered);
    const outcome = await runTool(s, key, name, raw);
    req.log.info({ trace_id: s.rollout.traceId, key, tool: name, status: outcome.status, replayed: outcome.replayed || replay }, 'tool call');
    void reply.type('text/plain; charset=utf-8').code(outcome.status === 'invalid_arguments' ? 422 : 200);
    return outcome.output;
  }

  return app;
}

/**
 * The session's run label: the x-rft-run header, else the row's responses_create_params.metadata.rft_run
 * (the Responses API's documented metadata map, which a Gym dataset row can carry and Gym passes along
 * untouched). A label that is not one is a coded 400, as on /tools and /grade.
 */
function sessionRun(headers: FastifyRequest['headers'], body: SeedBody): string | undefined {
  const header = runOfHeaders(headers);
  if (header !== undefined) return header;
  const metadata = (body.responses_create_params as { metadata?: unknown }).metadata;
  if (!metadata || typeof metadata !== 'object') return undefined;
  return parseRunLabel((metadata as Record<string, unknown>)[RUN_METADATA_KEY], `responses_create_params.metadata.${RUN_METADATA_KEY}`);
}
