// The sessions of OpenEnv's HTTP `POST /mcp` (http_server.py mcp_handler: openenv/session/create, then
// tools/call with the session_id in its params, then openenv/session/close): each one an episode, kept by
// the store (door_sessions, door `openenv`) as NeMo Gym's and ORS's sessions are, read from it per request,
// so any replica serves any session and a restart keeps it. A tools/call's exactly-once key in the ledger
// is its JSON-RPC id within the session (OpenEnv's client numbers its requests): a request with the id of
// an earlier one and the same call is that call's retry, answered the recorded result on any replica; one
// without an id, or reusing an id for another call, is a new call. The steps are the WebSocket episode's
// (./episode.ts): the same observations, the same submit graded once, the same unanswered end.
import type { Logger } from 'pino';
import { errors, isRftError, type RftError } from '../../errors.js';
import { canonicalJson } from '../../protocol/canonical.js';
import type { DoorSessionRecord } from '../../store/types.js';
import { failureClass, NO_ANSWER, type DoorCore, type Rollout } from '../core.js';
import { recordedRollout, SessionRecords, type Held } from '../session-record.js';
import { endStep, Episode, notFoundStep, OPENENV_DOOR, outcomeStep, overStep, SUBMITTED, submittedAnswer, type StepData } from './episode.js';
import { SUBMIT_TOOL, type PickedRow } from './rows.js';

/** The session's state as the store keeps it (JSON). */
interface State {
  environment: string;
  split: string;
  index: number;
  episodeId: string | null;
  run: string | null;
  /** Calls keyed so far: the next one's ledger key is `mcp-${seq + 1}`. */
  seq: number;
  /** Each tools/call by JSON-RPC id: its call (tool and canonical arguments) and its ledger key. */
  ids: Record<string, { call: string; key: string }>;
  /** The key of what ended the episode (a submit, a spent budget, a close). */
  endedBy: string | undefined;
  reward: number | null;
  /** A failure of ours in a call (its key): the episode is not the model's unless that call's retry succeeds. */
  broken: { code: string; key: string } | undefined;
  closed: boolean;
}

/** A session as read from the store at one version. */
export interface McpSession {
  id: string;
  state: State;
  rollout: Rollout;
  held: Held<State>;
}

const CLOSE_KEY = 'close';
const rpcKey = (id: string | number): string => `${typeof id}:${String(id)}`;

export class McpSessions {
  private readonly records: SessionRecords<State>;

  constructor(
    private readonly core: DoorCore,
    idleMs: number,
    private readonly log: Logger,
  ) {
    this.records = new SessionRecords<State>(core.store, OPENENV_DOOR, idleMs, () => errors.store('the session went while it was changed'), (r) => void this.idleEnd(r));
  }

  /** Opens an episode on the row (its rollout, its sandbox started now) and records its session. */
  async create(environment: string, picked: PickedRow, episodeId: string | undefined, run: string | undefined): Promise<McpSession> {
    const ep = await Episode.start(this.core, environment, picked, episodeId, run);
    const { rollout } = ep;
    const state: State = {
      environment, split: picked.split, index: picked.index, episodeId: episodeId ?? null, run: run ?? null,
      seq: 0, ids: {}, endedBy: undefined, reward: null, broken: undefined, closed: false,
    };
    try {
      const held = await this.records.create({ id: rollout.traceId, traceId: rollout.traceId, environment: rollout.environment ?? null, tools: [...rollout.tools], run: run ?? null }, state);
      return { id: rollout.traceId, state, rollout, held };
    } catch (e) {
      await this.core.end(rollout).catch(() => undefined);
      throw e;
    }
  }

  /** The live session of the environment, or the coded error a client gets for it. */
  async get(environment: string, id: unknown): Promise<McpSession> {
    if (typeof id !== 'string' || id === '') throw errors.badRequest("Invalid params - 'session_id' is required");
    const held = await this.records.read(id);
    if (!held || held.state.environment !== environment) throw errors.openenvSessionUnknown(id);
    return this.of(held);
  }

  /** A tools/call in the session: run once per key through the core, the episode's step as the WebSocket's. */
  async call(s0: McpSession, rpcId: string | number | null, name: string, args: Record<string, unknown>): Promise<StepData> {
    if (s0.state.closed) throw errors.openenvSessionClosed(s0.id);
    const call = `${name}\0${canonicalJson(args)}`;
    let key = '';
    const s = await this.change(s0, (st) => {
      const known = rpcId === null ? undefined : st.ids[rpcKey(rpcId)];
      if (known?.call === call) {
        key = known.key;
        return undefined;
      }
      key = `mcp-${st.seq + 1}`;
      return { ...st, seq: st.seq + 1, ids: rpcId === null ? st.ids : { ...st.ids, [rpcKey(rpcId)]: { call, key } } };
    });
    if (s.state.closed) throw errors.openenvSessionClosed(s.id);
    if (s.state.endedBy !== undefined && s.state.endedBy !== key) return overStep(name, s.state.reward);
    if (name === SUBMIT_TOOL) {
      const answer = submittedAnswer(args);
      return typeof answer === 'string' ? this.end(s, key, SUBMIT_TOOL, SUBMITTED, answer) : answer;
    }
    if (!s.rollout.tools.has(name)) return notFoundStep(name, s.rollout.tools);
    const outcome = await this.ours(s, key, () => this.core.callTool(s.rollout, key, name, args));
    // (a call whose failure of ours broke the episode ran on its retry: the episode is the model's again)
    if (s.state.broken?.key === key) await this.change(s, (st) => (st.broken?.key === key ? { ...st, broken: undefined } : undefined));
    return outcomeStep(name, outcome) ?? this.end(s, key, name, outcome.output, NO_ANSWER);
  }

  /**
   * openenv/session/close: an episode not ended yet ends unanswered, graded with an empty answer or not by the
   * core's rule (DoorCore.gradesUnanswered: not when a failure of ours broke it, nor when it was last used
   * before this process served), its rollout ends, and the session is closed. A retried close answers the same.
   */
  async close(s: McpSession): Promise<void> {
    let cur = s;
    if (!cur.state.closed) {
      // (a close whose grade failed on our side grades on its retry)
      const answered = cur.state.endedBy !== undefined && cur.state.endedBy !== CLOSE_KEY;
      const broken = cur.state.broken !== undefined && cur.state.broken.key !== CLOSE_KEY;
      if (this.core.gradesUnanswered({ by: 'client', lastUsed: cur.held.lastUsed }, { answered, broken })) await this.end(cur, CLOSE_KEY, SUBMIT_TOOL, '', NO_ANSWER);
      cur = await this.change(cur, (st) => (st.closed ? undefined : { ...st, closed: true }), true);
    }
    // A graded episode's sandbox goes after the grace period; an ungraded one's now.
    if (cur.state.reward === null) await this.core.end(cur.rollout);
  }

  /** Ends the episode by `key` (taken before its grade runs: another end sent meanwhile, on any replica, finds it over) and grades `answer`. */
  private async end(s: McpSession, key: string, tool: string, text: string, answer: string): Promise<StepData> {
    if (s.state.broken && s.state.broken.key !== key) throw errors.openenvRolloutLost(s.state.broken.code);
    let mine = false;
    const cur = await this.change(s, (st) => {
      mine = st.endedBy === undefined || st.endedBy === key;
      return st.endedBy === undefined ? { ...st, endedBy: key } : undefined;
    });
    if (!mine) return overStep(tool, cur.state.reward);
    if (cur.state.broken && cur.state.broken.key !== key) throw errors.openenvRolloutLost(cur.state.broken.code);
    const g = await this.ours(cur, key, () => this.core.grade(cur.rollout, answer));
    await this.change(cur, (st) => (st.reward === g.score ? undefined : { ...st, reward: g.score, broken: st.broken?.key === key ? undefined : st.broken }));
    return endStep(tool, text, g.score);
  }

  /** Runs a step of the core; a failure of ours breaks the episode (recorded with its key) and is thrown. */
  private async ours<T>(s: McpSession, key: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      const err: RftError = isRftError(e) ? e : errors.internal((e as Error).message);
      if (failureClass(err, 'call') === 'ours') {
        await this.change(s, (st) => (st.broken ? undefined : { ...st, broken: { code: err.code, key } })).catch((w: unknown) =>
          this.log.warn({ err: w, trace_id: s.id }, 'openenv mcp: the broken episode could not be recorded'),
        );
      }
      throw err;
    }
  }

  /** A session unused for RFT_OPENENV_IDLE_MS (this replica's sweep removed it): ended unanswered, as the WebSocket's idle end. */
  private async idleEnd(r: DoorSessionRecord): Promise<void> {
    const st = JSON.parse(r.state) as State;
    const trace_id = r.traceId;
    // (a closed session ended at its close)
    if (st.closed) return;
    let graded = st.reward !== null;
    const end = { by: 'idle', lastUsed: r.lastUsed } as const;
    const episode = { answered: st.endedBy !== undefined, broken: st.broken !== undefined };
    if (this.core.gradesUnanswered(end, episode)) {
      try {
        const rec = await this.core.store.getRollout(r.traceId);
        const g = await this.core.endUnanswered(recordedRollout(this.core, OPENENV_DOOR, { ...r, item: rec?.item ?? null }, st.run ?? undefined), end, episode);
        graded = g !== undefined;
        this.log.info({ trace_id, reward: g?.score ?? null }, 'openenv mcp session idle: ended unanswered');
      } catch (err) {
        this.log.warn({ err, trace_id }, 'openenv mcp session idle: its unanswered end could not be graded');
      }
    }
    // A graded episode's sandbox goes after the grace period; an ungraded one's now.
    if (!graded) await this.core.end({ traceId: r.traceId }).catch((err: unknown) => this.log.warn({ err, trace_id }, 'openenv mcp session idle: its end failed'));
  }

  private of(held: Held<State>): McpSession {
    return { id: held.record.id, state: held.state, rollout: recordedRollout(this.core, OPENENV_DOOR, held.record, held.state.run ?? undefined), held };
  }

  private async change(s: McpSession, f: (st: State) => State | undefined, ended = false): Promise<McpSession> {
    const held = await this.records.change(s.held, f, ended ? { ended: true } : {});
    return { ...s, state: held.state, held };
  }

  /** Stops the idle sweep: the sessions stay in the record for the next process. */
  stop(): void {
    this.records.close();
  }
}
