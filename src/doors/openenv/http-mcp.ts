// OpenEnv's production-mode `POST /{env}/mcp` (huggingface/OpenEnv http_server.py mcp_endpoint and
// mcp_handler; its client, mcp_client.py MCPClientBase, posts {"jsonrpc":"2.0","method","params","id"} as
// application/json with an id it counts up): openenv/session/create opens an episode and answers its
// session_id, tools/list and tools/call name it in their params, openenv/session/close ends it
// (./mcp-sessions.ts keeps them in the store). A tools/call without a session_id is stateless, as
// OpenEnv's (a fresh episode for the one call, as POST /step). Replies are JSON-RPC as OpenEnv's: a
// client's mistake is HTTP 200 with -32600/-32601/-32602 (an unknown or closed session_id -32602, as
// OpenEnv answers an unknown one), and `data` carries our RFT_ERR_* code and `retryable: false`; a
// failure of ours is -32000 with `retryable: true` and the error's 5xx status (the call was not
// recorded or charged: send it again with the same id). The model's mistakes are tool results with is_error.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { errors, isRftError, type RftError } from '../../errors.js';
import type { DoorCore } from '../core.js';
import type { Environment, Environments } from '../../environments/environment.js';
import { firstRunLabel, RUN_HEADER, RUN_PARAM } from '../../protocol/run-label.js';
import { Episode, resetObservation } from './episode.js';
import { callReply, fail, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, mcpTools, PARSE_ERROR, requestSchema, SERVER_ERROR, type JsonRpcReply } from './mcp.js';
import { McpSessions } from './mcp-sessions.js';
import { resetSchema, rowToolSpecs, SUBMIT_SPEC, type RowSource, type ToolSpec } from './rows.js';

export interface HttpMcpDeps {
  core: DoorCore;
  rows: RowSource;
  environments: Environments;
  /** Each environment's tools and submit (a listing without a session). */
  toolsOf: ReadonlyMap<string, ToolSpec[]>;
  log: Logger;
  /** A session unused this long ends unanswered (RFT_OPENENV_IDLE_MS). */
  idleMs: number;
}

type Id = string | number | null;

/** A coded error as a JSON-RPC reply and its HTTP status: ours a 5xx the client sends again, a client's mistake a 200. */
function rpcError(id: Id, e: RftError): { status: number; body: JsonRpcReply } {
  if (e.statusCode >= 500) return { status: e.statusCode, body: fail(id, SERVER_ERROR, e.message, { code: e.code, retryable: true }) };
  return { status: 200, body: fail(id, INVALID_PARAMS, e.message, { code: e.code, retryable: false }) };
}

export function registerHttpMcp(app: FastifyInstance, d: HttpMcpDeps): void {
  const sessions = new McpSessions(d.core, d.idleMs, d.log);
  app.addHook('onClose', async () => sessions.stop());

  /** What fails before the handler (the body): OpenEnv answers unparsable JSON -32700, an unknown environment stays a 404. */
  const errorHandler = (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const e = isRftError(err) ? err : errors.internal(err.message);
    if (e.code === errors.unknownEnvironment.code) return reply.code(404).send(fail(null, INVALID_REQUEST, e.message, { code: e.code, retryable: false }));
    if (req.bodyError === err && e.code === errors.badRequest.code) return reply.code(200).send(fail(null, PARSE_ERROR, 'Parse error', { code: e.code, retryable: false }));
    if (e.statusCode < 500) return reply.code(200).send(fail(null, INVALID_REQUEST, e.message, { code: e.code, retryable: false }));
    req.log.warn({ err }, 'openenv mcp failed on our side');
    const { status, body } = rpcError(null, e);
    return reply.code(status).send(body);
  };

  app.post<{ Params: { env: string } }>('/:env/mcp', { errorHandler }, async (req, reply) => {
    const env = d.environments.get(req.params.env);
    const parsed = requestSchema.safeParse(req.body);
    if (!parsed.success) return fail(null, INVALID_REQUEST, `Invalid request: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(request)'}: ${i.message}`).join('; ')}`);
    const id = parsed.data.id ?? null;
    try {
      return await dispatch(req, env, parsed.data.method, parsed.data.params, id);
    } catch (err) {
      const e = isRftError(err) ? err : errors.internal((err as Error).message);
      if (e.statusCode >= 500) req.log.warn({ err, method: parsed.data.method }, 'openenv mcp failed on our side');
      const { status, body } = rpcError(id, e);
      return reply.code(status).send(body);
    }
  });

  async function dispatch(req: FastifyRequest, env: Environment, method: string, params: Record<string, unknown>, id: Id): Promise<JsonRpcReply> {
    const ok = (result: unknown): JsonRpcReply => ({ jsonrpc: '2.0', id, result });
    switch (method) {
      case 'openenv/session/create': {
        const data = resetSchema.safeParse(params);
        if (!data.success) throw errors.badRequest(`invalid session params: ${data.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
        const query = (req.query ?? {}) as Record<string, unknown>;
        const run = firstRunLabel([req.headers[RUN_HEADER], `header ${RUN_HEADER}`], [query[RUN_PARAM], `query parameter ${RUN_PARAM}`], [data.data.run, `params ${RUN_PARAM}`]);
        const episodeId = data.data.episode_id ?? undefined;
        const picked = await d.rows.pick(env.name, data.data);
        const s = await sessions.create(env.name, picked, episodeId, run);
        req.log.info({ trace_id: s.id, environment: env.name, split: picked.split, index: picked.index, run }, 'openenv mcp session');
        // (the client reads session_id; the prompt beside it is for a client that reads it)
        const { metadata: _m, ...about } = resetObservation(env.name, picked, episodeId).observation;
        return ok({ session_id: s.id, ...about });
      }
      case 'openenv/session/close': {
        const s = await sessions.get(env.name, params.session_id);
        await sessions.close(s);
        return ok({ session_id: s.id, closed: true });
      }
      case 'tools/list': {
        if (params.session_id === undefined) return ok({ tools: mcpTools(d.toolsOf.get(env.name)!) });
        const s = await sessions.get(env.name, params.session_id);
        if (s.state.closed) throw errors.openenvSessionClosed(s.id);
        const { row } = await d.rows.pick(env.name, { split: s.state.split, index: s.state.index });
        return ok({ tools: mcpTools([...rowToolSpecs(row), SUBMIT_SPEC]) });
      }
      case 'tools/call': {
        const name = params.name;
        if (typeof name !== 'string' || name === '') return fail(id, INVALID_PARAMS, "Missing 'name' in params");
        const args = params.arguments ?? {};
        if (!args || typeof args !== 'object' || Array.isArray(args)) return fail(id, INVALID_PARAMS, "'arguments' must be an object");
        const input = args as Record<string, unknown>;
        if (params.session_id !== undefined) return callReply(id, name, await sessions.call(await sessions.get(env.name, params.session_id), id, name, input));
        return callReply(id, name, await stateless(req, env, params, name, input));
      }
      default:
        return fail(id, METHOD_NOT_FOUND, `Method not found: ${method}`);
    }
  }

  /** A call without a session: a fresh episode of the row its params name, for this one call (recorded, then ended). */
  async function stateless(req: FastifyRequest, env: Environment, params: Record<string, unknown>, name: string, input: Record<string, unknown>) {
    const { name: _n, arguments: _a, ...selection } = params;
    const data = resetSchema.safeParse(selection);
    if (!data.success) throw errors.badRequest(`invalid row selection: ${data.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    const run = firstRunLabel([req.headers[RUN_HEADER], `header ${RUN_HEADER}`], [data.data.run, `params ${RUN_PARAM}`]);
    const ep = await Episode.start(d.core, env.name, await d.rows.pick(env.name, data.data), data.data.episode_id ?? undefined, run);
    try {
      return await ep.callTool(name, input);
    } finally {
      await ep.close();
    }
  }
}
