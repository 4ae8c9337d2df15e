// One OpenEnv WebSocket: OpenEnv's /ws session protocol (huggingface/OpenEnv
// src/openenv/core/env_server/http_server.py websocket_endpoint; the client, env_client.py, sends one
// frame and waits for its reply, matching replies by order). Frames are handled one at a time, in
// arrival order, each answered before the next starts. A socket serves many episodes: each reset ends
// the previous one and starts another (TRL's environment_factory keeps one client per slot across
// batches). When the socket closes, abruptly or by a `close` frame, the step running finishes and is
// recorded, frames not started are dropped, and the episode's rollout ends (a graded one keeps its grade).
// An episode that ends without an answer (a reset, a close, or no frame for idleMs) is graded as it stands
// with an empty answer, unless a failure of ours broke it (docs/openenv.md, "Episodes that end unanswered").
import type { WebSocket } from 'ws';
import type { Logger } from 'pino';
import { errors, isRftError, type RftError } from '../../errors.js';
import type { DoorCore, UnansweredEnd } from '../core.js';
import type { Environment } from '../../environments/environment.js';
import { Episode, type StepData } from './episode.js';
import { resetSchema, type RowSource, type ToolSpec } from './rows.js';
import { mcpReply, type JsonRpcReply } from './mcp.js';
import { actionOf } from './actions.js';
import { firstRunLabel, RUN_PARAM } from '../../protocol/run-label.js';

/** How long a shutdown waits for a client to answer its close frame before cutting the socket. */
const SHUTDOWN_CLOSE_MS = 2_000;
/** How long a shutdown waits for what a socket was doing to finish. */
const SHUTDOWN_DRAIN_MS = 5_000;

export interface SocketDeps {
  core: DoorCore;
  rows: RowSource;
  environment: Environment;
  /** The environment's tools (and submit): list_tools needs no reset (mcp_types.py ListToolsAction). */
  envTools: ToolSpec[];
  log: Logger;
  /** The run label of the socket's URL (`/ws?run=x`): its episodes' (before a reset's own `run`). */
  run?: string | undefined;
  /** An episode with no frame this long ends unanswered (RFT_OPENENV_IDLE_MS). */
  idleMs: number;
}

type Reply = { type: 'observation'; data: StepData } | { type: 'state'; data: Record<string, unknown> } | { type: 'mcp'; data: JsonRpcReply } | { type: 'error'; data: Record<string, unknown> };

/**
 * An `error` frame (OpenEnv's client raises it: "Server error: {message} (code: {code})"). Never the model's
 * doing: a failure of ours (retryable: reset and run the episode again) or a client's malformed frame.
 */
export function errorFrame(e: RftError): Reply {
  return { type: 'error', data: { message: e.message, code: e.code, retryable: e.statusCode >= 500 } };
}

export class OpenEnvSocket {
  private tail: Promise<void> = Promise.resolve();
  private episode: Episode | undefined;
  private closed = false;
  private idle: NodeJS.Timeout | undefined;
  /** Frames received: an idle end armed before the last one is void. */
  private frames = 0;
  /** When the last frame came (an idle end's `lastUsed`). */
  private lastFrameAt = Date.now();
  private shuttingDown = false;
  /** Resolves when the socket has closed (its end is then queued on the tail). */
  private readonly ended: Promise<void>;
  readonly id = `ws_${Math.random().toString(36).slice(2, 10)}`;

  constructor(
    private readonly ws: WebSocket,
    private readonly d: SocketDeps,
  ) {
    ws.on('message', (raw: Buffer, isBinary: boolean) => {
      const text = isBinary ? '' : raw.toString('utf8');
      this.frames++;
      this.lastFrameAt = Date.now();
      clearTimeout(this.idle);
      this.tail = this.tail.then(() => this.handle(text));
    });
    this.ended = new Promise((resolve) => ws.once('close', () => resolve()));
    ws.on('close', () => {
      this.closed = true;
      clearTimeout(this.idle);
      this.tail = this.tail.then(() => this.endEpisode());
    });
    ws.on('error', (err) => d.log.warn({ err }, 'openenv socket error'));
  }

  /** Resolves once every frame received has been handled and the episode ended. */
  drained(): Promise<void> {
    return this.tail;
  }

  /**
   * The server is closing: the socket is closed and its open episode ends ungraded. A shutdown is ours, not
   * the model's end of its episode (the trainer's client sees its socket drop, an episode to rerun).
   */
  shutdown(): Promise<void> {
    this.shuttingDown = true;
    this.ws.close(1001, 'server shutting down');
    // A client that does not answer the close frame is cut after a moment, not ws's 30 s.
    const cut = setTimeout(() => this.ws.terminate(), SHUTDOWN_CLOSE_MS);
    // What the socket was doing (a step, the graded end of an episode its client closed) may finish, within a
    // bound below Fastify's 10 s for a close hook: a shutdown must not hang on it (what is cut is ours, ungraded).
    let bound: NodeJS.Timeout | undefined;
    const drained = this.ended.then(() => this.tail);
    return Promise.race([drained, new Promise<void>((resolve) => (bound = setTimeout(resolve, SHUTDOWN_DRAIN_MS)))]).finally(() => {
      clearTimeout(cut);
      clearTimeout(bound);
    });
  }

  private async endEpisode(): Promise<void> {
    const ep = this.episode;
    this.episode = undefined;
    if (!ep) return;
    await this.endUnanswered(ep, this.shuttingDown ? { by: 'ours' } : { by: 'client', lastUsed: this.lastFrameAt });
  }

  /** Ends an open episode by the core's rule for an episode without an answer, then its rollout. */
  private async endUnanswered(ep: Episode, end: UnansweredEnd): Promise<void> {
    const trace_id = ep.rollout.traceId;
    await ep.endUnanswered(end).catch((err: unknown) => this.d.log.warn({ err, trace_id }, 'openenv episode ended unanswered and could not be graded'));
    // At a shutdown the sandboxes' own close removes the episode's sandbox.
    if (end.by === 'ours') return;
    await ep.close().catch((err: unknown) => this.d.log.warn({ err, trace_id }, 'openenv episode end failed'));
  }

  /** Arms the idle end of an open episode: it runs in frame order, and only if no frame came since. */
  private armIdle(): void {
    clearTimeout(this.idle);
    const ep = this.episode;
    if (!ep || ep.done || ep.broken || this.closed) return;
    const frames = this.frames;
    this.idle = setTimeout(() => {
      this.tail = this.tail.then(async () => {
        if (this.closed || this.episode !== ep || this.frames !== frames) return;
        this.d.log.info({ trace_id: ep.rollout.traceId, socket: this.id, idle_ms: this.d.idleMs }, 'openenv episode idle: ended unanswered');
        // The episode stays the socket's: its state, and a step after it, answer its recorded reward.
        await this.endUnanswered(ep, { by: 'idle', lastUsed: this.lastFrameAt });
      });
    }, this.d.idleMs);
    this.idle.unref();
  }

  private async handle(text: string): Promise<void> {
    // A frame that arrived before the socket closed but was not started: nobody is left to read its reply.
    if (this.closed) return;
    let reply: Reply | undefined;
    try {
      reply = await this.frame(text);
    } catch (e) {
      const err = isRftError(e) ? e : errors.internal((e as Error).message);
      if (err.statusCode >= 500) this.d.log.warn({ err, trace_id: this.episode?.rollout.traceId }, 'openenv step failed on our side');
      reply = errorFrame(err);
    }
    if (reply && !this.closed) this.ws.send(JSON.stringify(reply));
    this.armIdle();
  }

  private async frame(text: string): Promise<Reply | undefined> {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch (e) {
      throw errors.badRequest(`Invalid JSON: ${(e as Error).message}`);
    }
    const { type, data } = (msg && typeof msg === 'object' ? msg : {}) as { type?: unknown; data?: unknown };
    switch (type) {
      case 'reset':
        return { type: 'observation', data: await this.reset(data ?? {}) };
      case 'step':
        return { type: 'observation', data: await this.step(data) };
      case 'state':
        return { type: 'state', data: this.current().state() };
      case 'mcp':
        return { type: 'mcp', data: await mcpReply(data, this.episode, this.d.envTools, this.id) };
      case 'close':
        // env_client.py disconnect(): this frame, then the socket's close. Frames after it are not read.
        this.closed = true;
        this.ws.close(1000);
        return undefined;
      default:
        throw errors.badRequest(`Unknown message type: ${String(type)}`);
    }
  }

  private current(): Episode {
    if (!this.episode) throw errors.openenvNoEpisode();
    return this.episode;
  }

  private async reset(data: unknown): Promise<StepData> {
    const parsed = resetSchema.safeParse(data);
    if (!parsed.success) throw errors.badRequest(`invalid reset data: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    // The socket URL's label, else the reset's `run` (OpenEnv's client sends no header: reset(run="x") or /ws?run=x).
    const run = firstRunLabel([this.d.run, `query parameter ${RUN_PARAM}`], [parsed.data.run, `reset data ${RUN_PARAM}`]);
    await this.endEpisode();
    const picked = await this.d.rows.pick(this.d.environment.name, parsed.data);
    const ep = await Episode.start(this.d.core, this.d.environment.name, picked, parsed.data.episode_id ?? undefined, run);
    this.episode = ep;
    this.d.log.info({ trace_id: ep.rollout.traceId, environment: ep.environment, split: picked.split, index: picked.index, socket: this.id, run }, 'openenv reset');
    return ep.resetData();
  }

  private async step(data: unknown): Promise<StepData> {
    const action = actionOf(data);
    if (action.type === 'list_tools' && !this.episode) return { observation: { tools: this.d.envTools }, reward: null, done: false };
    const ep = this.current();
    return action.type === 'list_tools' ? ep.listTools() : ep.callTool(action.tool_name, action.arguments);
  }
}
