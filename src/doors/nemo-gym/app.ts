// The NeMo Gym door: a resources server at the root of its own listener, as Gym's simple_agent and
// verifiers' nemo_gym toolset call it (docs/nemo-gym.md). It translates; the core (../core.ts) runs.
import { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { errors, isRftError } from '../../errors.js';
import { canonicalJson } from '../../protocol/canonical.js';
import { graderCouldNotScore, type DoorCore } from '../core.js';
import { answerOf, graderItem, rowTools, seedBodySchema, verifyBodySchema, type SeedBody, type VerifyBody } from './rows.js';
import { parseRunLabel, runOfHeaders, RUN_METADATA_KEY } from '../../protocol/run-label.js';
import { rewardComponents } from './reward.js';
import { argsDigest, Sessions, traceIdOf, type ServedCall, type Session } from './sessions.js';
import type { Registry } from '../../registry/loader.js';
import type { Ledger } from '../../ledger/ledger.js';
import { doorMcp } from '../mcp/serve.js';
import { createToolServer, type RolloutScope } from '../mcp/server.js';
import { buildListener } from '../../http/listener.js';
import { toRftError } from '../../http/error-replies.js';
import type { DoorListenerSettings } from '../listen.js';

export const NEMO_GYM_DOOR = 'nemo-gym';
/** The session cookie (Gym's own servers name theirs after the server class; any name works for its client). */
export const SESSION_COOKIE = 'rft_nemo_gym_session';
const ROLLOUT_PREFIX = /^\/ng-rollout\/([^/?]{1,200})(\/.*)$/;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** The door's POST routes a model's tool call of the same name reaches (Gym's agent calls POST /{name}). */
export const CONTROL_ROUTES: ReadonlySet<string> = new Set(['seed_session', 'verify', 'aggregate_metrics', 'mcp']);
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
  /** The token's live session, as read for this request. */
  session?: Session;
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
  const { app, limits } = buildListener({
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
  const sessions = new Sessions(o.core, o.sessionTtlMs, NEMO_GYM_DOOR);
  app.addHook('onClose', async () => sessions.close());

  // Bodies are kept as bytes: a tool's arguments go to the ledger as sent (its depth and JSON checks),
  // and a retry is told by its bytes.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.addHook('onRequest', async (req) => {
    const token = cookieToken(req.headers.cookie);
    const s = await sessions.get(token);
    if (s) Object.assign(of(req), { token, session: s });
  });
  // The session's cookie on every reply, errors included: simple_agent replaces its cookies with
  // each reply's Set-Cookie, and a reply without one leaves its next call cookie-less.
  app.addHook('onSend', async (req, reply) => {
    const token = of(req).token;
    if (token !== undefined) void reply.header('set-cookie', `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax`);
  });
  // Every reply's error carries an RFT_ERR_* code, Fastify's own mapped as on every listener
  // (src/http/error-replies.ts): a body over the limit 413, a Content-Type that is no media type 415, a
  // route the door does not have 404 in our shape.
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const e = toRftError(err, req, limits);
    if (e.statusCode >= 500) req.log.error({ err }, 'nemo-gym door failed');
    void reply.code(e.statusCode).send(e.toJSON());
  });
  app.setNotFoundHandler((req, reply) => {
    const e = errors.notFound(`route ${req.method} ${req.url.split('?')[0]} on the NeMo Gym door`);
    void reply.code(e.statusCode).send(e.toJSON());
  });

  const session = (req: FastifyRequest): Session => {
    const s = of(req).session;
    if (s) return s;
    if (cookieToken(req.headers.cookie) !== undefined) throw errors.nemoGymSessionLost();
    throw errors.nemoGymSession('no session cookie');
  };

  // A control route reached with a session's cookie is the model's tool call of that name (Gym's agent
  // sends its tool calls with the episode's cookies; its own control requests before or without them):
  // a tool error, listed as served (/verify's episode lists it), whatever its body.
  const controlCall = async (req: FastifyRequest, reply: FastifyReply, name: string): Promise<void> => {
    if (cookieToken(req.headers.cookie) === undefined) return;
    const s = of(req).session;
    if (!s) throw errors.nemoGymSessionLost();
    throw await refuse(req, reply, s, name);
  };
  /** The model's call to a control route: keyed and listed as served (its retry is not listed twice), a tool error. */
  const refuse = async (req: FastifyRequest, reply: FastifyReply, s: Session, name: string) => {
    const body = parseJson(req.body);
    whenWritten(reply, await sessions.keyFor(s, fingerprintOf(name, body.raw), { name, args: servedArgs(body) }));
    return errors.nemoGymNotATool(name);
  };

  // A row's tool named like a control route is never served here (docs/nemo-gym.md): said once per name.
  const warned = new Set<string>();
  const warnControlNamed = (req: FastifyRequest, tools: readonly string[]): void => {
    for (const name of tools) {
      if (!CONTROL_ROUTES.has(name) || warned.has(name)) continue;
      warned.add(name);
      req.log.warn({ tool: name }, `the row offers a tool named "${name}", a control route of the NeMo Gym door: its calls are tool errors here (rename the tool to train it through NeMo Gym)`);
    }
  };

  // A tool call's failure of ours breaks the episode (/verify then answers 503), whichever wire it came by.
  const runTool = async (s: Session, key: string, name: string, args: unknown) => {
    try {
      return await o.core.callTool(s.rollout, key, name, args);
    } catch (e) {
      if (isRftError(e) && e.statusCode >= 500) await sessions.markBroken(s, e.code);
      throw e;
    }
  };

  if (o.mcp) {
    // The token is the session's own (as the cookie): it names the rollout, whose tools alone are listed and callable.
    const tokenOf = (ctx: Parameters<RolloutScope['list']>[0]) => ctx.http?.req?.headers.get(MCP_TOKEN_HEADER) ?? undefined;
    const rollouts: RolloutScope = {
      list: async (ctx) => (await sessions.get(tokenOf(ctx)))?.rollout.tools ?? new Set(),
      resolve: async (ctx) => {
        const token = tokenOf(ctx);
        if (token === undefined) throw errors.nemoGymSession(`no ${MCP_TOKEN_HEADER} header`);
        const s = await sessions.get(token);
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
        // Gym's MCP clients send the token header; a POST with the episode's cookie and no token is the model's tool named mcp.
        if (req.method === 'POST' && req.headers[MCP_TOKEN_HEADER.toLowerCase()] === undefined) await controlCall(req, reply, 'mcp');
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
  app.post('/aggregate_metrics', async (req, reply) => {
    await controlCall(req, reply, 'aggregate_metrics');
    return { group_level_metrics: [], agent_metrics: {}, key_metrics: {} };
  });

  app.post('/seed_session', async (req, reply) => {
    // A session is seeded once, by a request that carries none: with a session's cookie this is the
    // model's tool call named seed_session (Gym's agent sends it the episode's cookies), whatever its body.
    await controlCall(req, reply, 'seed_session');
    const body = parseJson(req.body);
    const parsed = body.ok ? seedBodySchema.safeParse(body.value) : undefined;
    if (!parsed?.success) throw errors.badRequest('the body is not a NeMo Gym row (responses_create_params with input)');
    o.core.checkDepth(parsed.data, 'the row');
    warnControlNamed(req, rowTools(parsed.data));
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
    of(req).session = await sessions.add(token, rollout, canonicalJson(parsed.data.responses_create_params), run);
    of(req).token = token;
    req.log.info({ trace_id: rollout.traceId, environment: rollout.environment, ng_rollout_id: rolloutId }, 'nemo-gym session');
    // Gym's MCPServerMetadata (nemo_gym/base_resources_server.py), under the key its agents read.
    return o.mcp ? { mcp: { server_name: MCP_SERVER_NAME, url_path: '/mcp', transport: 'http', headers: { [MCP_TOKEN_HEADER]: token } } } : {};
  });

  app.post('/verify', async (req, reply) => {
    const s = session(req);
    const body = parseJson(req.body);
    const parsed = body.ok ? verifyBodySchema.safeParse(body.value) : undefined;
    // Graded once: a later /verify (Gym's retry, or one after the model's call graded) gets the recorded grade.
    if (s.graded) return { ...(parsed?.success ? parsed.data : {}), ...s.graded };
    // Gym's own /verify carries the seeded row and an episode listing every call the session served, in
    // order; a model's call named verify cannot list itself (docs/nemo-gym.md): it is a tool call, refused.
    if (!parsed?.success || canonicalJson(parsed.data.responses_create_params) !== s.params || !listsServed(parsed.data.response.output, s.served)) {
      throw await refuse(req, reply, s, 'verify');
    }
    // A failure of ours broke the episode: the trainer reruns the rollout (NeMo RL does, up to 5 times).
    if (s.broken) throw errors.nemoGymRolloutLost(s.broken.code);
    // The seeded row was checked; what else the trainer sent is echoed, so it is checked too.
    o.core.checkDepth(parsed.data, 'the /verify body');
    const echo = parsed.data as VerifyBody;
    try {
      const g = await o.core.grade(s.rollout, answerOf(echo));
      const graded = await sessions.markGraded(s, { reward: g.score, reward_components: rewardComponents(g.grader, g.score, g.subscores) });
      req.log.info({ trace_id: s.rollout.traceId, grader: g.grader, score: g.score, replayed: g.replayed }, 'nemo-gym verify');
      return { ...echo, ...graded };
    } catch (e) {
      // Gym's judge convention (nemo_gym/judge.py): a grader that cannot grade is a 0 marked judge_failed, not a 5xx
      // that would abort the whole collection. Our own failures (store, sandbox capacity) stay 5xx: a rerun is right.
      if (!graderCouldNotScore(e)) throw e;
      const graded = await sessions.markGraded(s, { reward: 0, reward_components: { [s.rollout.grader.def.name]: 0 }, _ng_failure_class: 'judge_failed', _ng_failure_detail: e.code });
      req.log.warn({ trace_id: s.rollout.traceId, err: e }, 'nemo-gym verify: grader failed (judge_failed)');
      return { ...echo, ...graded };
    }
  });

  app.post<{ Params: { tool: string } }>('/:tool', async (req, reply) => toolCall(req, reply, session(req), req.params.tool));

  async function toolCall(req: FastifyRequest, reply: FastifyReply, s: Session, name: string): Promise<string> {
    const body = parseJson(req.body);
    // Keyed (and listed as served) first: an unknown tool's call is in the episode /verify lists too.
    const { key, replay, ...fate } = await sessions.keyFor(s, fingerprintOf(name, body.raw), { name, args: servedArgs(body) });
    whenWritten(reply, fate);
    if (!TOOL_NAME.test(name) || !s.rollout.tools.has(name)) throw errors.unknownTool(name, [...s.rollout.tools]);
    const raw = body.raw;
    const outcome = await runTool(s, key, name, raw);
    req.log.info({ trace_id: s.rollout.traceId, key, tool: name, status: outcome.status, replayed: outcome.replayed || replay }, 'tool call');
    void reply.type('text/plain; charset=utf-8').code(outcome.status === 'invalid_arguments' ? 422 : 200);
    return outcome.output;
  }

  return app;
}

/** Records the fate of a keyed request's reply: delivered once written whole, abandoned if its socket closed first. */
function whenWritten(reply: FastifyReply, fate: { delivered: () => void; abandoned: () => void }): void {
  reply.raw.once('finish', fate.delivered);
  reply.raw.once('close', () => reply.raw.writableFinished || fate.abandoned());
}

const fingerprintOf = (name: string, raw: string): string => createHash('sha256').update(name).update('\0').update(raw).digest('base64url');

/** A served call's body as /verify compares it: canonical JSON, '' for none (Gym's agent sends no body for `null` arguments). */
function servedArgs(body: ReturnType<typeof parseJson>): string {
  if (!body.ok) return argsDigest(body.raw);
  return argsDigest(body.raw.trim() === '' || body.value === null ? '' : canonicalJson(body.value));
}

/**
 * Whether an episode (`response.output`) lists every call the session served, in order, among its
 * function calls: Gym's agent lists each call it sends (name and the arguments string it parsed into
 * the body) before sending it. Calls the episode has and the session did not serve are allowed (the
 * agent answers unparseable arguments itself; verifiers refuses unknown names itself; MCP calls go
 * by /mcp). A name that is no plain tool name may reach the route changed (a '?', a '/'), so only its
 * arguments are compared; arguments JavaScript cannot parse (Python's NaN) only by name.
 */
function listsServed(output: readonly { type: string }[], served: readonly ServedCall[]): boolean {
  let next = 0;
  for (const item of output) {
    if (next === served.length) break;
    const { type, name, arguments: args } = item as { type: string; name?: unknown; arguments?: unknown };
    if (type !== 'function_call' || typeof name !== 'string' || typeof args !== 'string') continue;
    const want = served[next]!;
    let value: unknown;
    let parsed = true;
    try {
      value = JSON.parse(args);
    } catch {
      parsed = false;
    }
    const sameArgs = parsed && argsDigest(value === null ? '' : canonicalJson(value)) === want.args;
    const match = parsed ? sameArgs && (name === want.name || !TOOL_NAME.test(name)) : name === want.name;
    if (match) next++;
  }
  return next === served.length;
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
