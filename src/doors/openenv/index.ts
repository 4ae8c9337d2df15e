// The OpenEnv door (docs/openenv.md) on the private listener: an environment `finqa` is served at
// http://host:port/finqa, the base URL OpenEnv's clients take (env_client.py appends /ws to it):
// WS /{env}/ws (one socket, many episodes: ./socket.ts), and HTTP POST /{env}/reset and /{env}/step,
// stateless as OpenEnv defines them (http_server.py reset_handler, step_handler: a fresh environment
// per request, no episode kept), and GET /{env}/health, /metadata, /schema, /state as its server answers
// them (./info.ts), and POST /{env}/mcp, OpenEnv's production-mode JSON-RPC whose sessions the store keeps
// (./http-mcp.ts). A run label comes on the URL (`/ws?run=x`), in a reset's or a step's `run`, or as
// the x-rft-run header of an HTTP step (src/protocol/run-label.ts): OpenEnv's client sends no header.
import { WebSocketServer, type WebSocket } from 'ws';
import type { FastifyInstance } from 'fastify';
import { errors, isRftError } from '../../errors.js';
import type { PrivateDoor, PrivateDoorContext } from '../private/door.js';
import type { Environment } from '../../environments/environment.js';
import { Episode, resetObservation, type StepData } from './episode.js';
import { resetSchema, RowSource, SUBMIT_SPEC, SUBMIT_TOOL, type ToolSpec } from './rows.js';
import { actionOf } from './actions.js';
import { OpenEnvSocket } from './socket.js';
import { registerInfoRoutes } from './info.js';
import { registerHttpMcp } from './http-mcp.js';
import { firstRunLabel, RUN_HEADER, RUN_PARAM, runOfUrl } from '../../protocol/run-label.js';

const WS_PATH = /^\/([A-Za-z0-9_.-]{1,200})\/ws\/?(?:\?.*)?$/;

export const openEnvDoor: PrivateDoor = {
  name: 'openenv',
  // Its routes start with an environment's name, so they take no segment of their own.
  segments: [],
  register,
};

function envTools(ctx: PrivateDoorContext, env: Environment): ToolSpec[] {
  const tools = env.tools.flatMap((name) => {
    const t = ctx.registry.tools.get(name);
    return t ? [{ name, description: t.def.description, input_schema: t.parameters }] : [];
  });
  return [...tools, SUBMIT_SPEC];
}

function register(app: FastifyInstance, ctx: PrivateDoorContext): void {
  const { core, environments, log } = ctx;
  for (const env of environments.list()) {
    // The episode's own submit tool would hide an environment's tool of that name.
    if (env.tools.includes(SUBMIT_TOOL)) throw errors.config(`environment "${env.name}" has a tool named "${SUBMIT_TOOL}", the OpenEnv door's answer tool`);
  }
  const rows = new RowSource(environments);
  const toolsOf = new Map(environments.list().map((e) => [e.name, envTools(ctx, e)]));
  const environment = (name: string): Environment => environments.get(name);

  const wss = new WebSocketServer({ noServer: true, maxPayload: ctx.config.bodyLimitBytes });
  const sockets = new Set<{ ws: WebSocket; session: OpenEnvSocket }>();
  app.server.on('upgrade', (req, socket, head) => {
    const m = WS_PATH.exec(req.url ?? '');
    const env = m ? environments.list().find((e) => e.name === m[1]) : undefined;
    if (!env) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    let run: string | undefined;
    try {
      run = runOfUrl(req.url ?? '');
    } catch (e) {
      if (!isRftError(e)) throw e;
      const body = JSON.stringify(e.toJSON());
      socket.end(`HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const session = new OpenEnvSocket(ws, { core, rows, environment: env, envTools: toolsOf.get(env.name)!, log, run, idleMs: ctx.config.openenv.idleMs });
      const entry = { ws, session };
      sockets.add(entry);
      ws.on('close', () => void session.drained().finally(() => sockets.delete(entry)));
    });
  });
  // Sockets are not the HTTP server's connections: closed here, their running steps finish first.
  app.addHook('preClose', async () => {
    // Each socket closed and its episode ended (ungraded: the shutdown is ours) while the store and sandboxes are still open.
    await Promise.all([...sockets].map(({ session }) => session.shutdown()));
    wss.close();
  });

  registerInfoRoutes(app, environment);
  registerHttpMcp(app, { core, rows, environments, toolsOf, log, idleMs: ctx.config.openenv.idleMs });

  app.post<{ Params: { env: string } }>('/:env/reset', async (req) => {
    const env = environment(req.params.env);
    const parsed = resetSchema.safeParse(req.body ?? {});
    if (!parsed.success) throw errors.badRequest(`invalid reset request: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
    return resetObservation(env.name, await rows.pick(env.name, parsed.data), parsed.data.episode_id ?? undefined);
  });

  app.post<{ Params: { env: string } }>('/:env/step', async (req, reply): Promise<StepData> => {
    const env = environment(req.params.env);
    const body = (req.body ?? {}) as { action?: unknown };
    let action;
    try {
      action = actionOf(body.action);
    } catch (e) {
      // FastAPI's validation status for an action its model refuses (http_server.py step_handler).
      return reply.code(422).send((e as { toJSON(): unknown }).toJSON());
    }
    if (action.type === 'list_tools') return { observation: { tools: toolsOf.get(env.name)! }, reward: null, done: false };
    const parsed = resetSchema.safeParse(body);
    if (!parsed.success) throw errors.badRequest(`invalid row selection: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
    const query = (req.query ?? {}) as Record<string, unknown>;
    const run = firstRunLabel([req.headers[RUN_HEADER], `header ${RUN_HEADER}`], [query[RUN_PARAM], `query parameter ${RUN_PARAM}`], [parsed.data.run, `body ${RUN_PARAM}`]);
    // A fresh episode for this one action, as OpenEnv's HTTP step uses a fresh environment.
    const ep = await Episode.start(core, env.name, await rows.pick(env.name, parsed.data), parsed.data.episode_id ?? undefined, run);
    try {
      return await ep.callTool(action.tool_name, action.arguments);
    } finally {
      await ep.close();
    }
  });
}
