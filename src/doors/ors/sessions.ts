// The ORS door's sessions: a session id (sid) minted at /create_session is one rollout, bound to its
// row at /create (or at its first /{env}/... call, when /create named no environment: the reference
// client sends split and index only). A call's task_id is minted on receipt and is its exactly-once
// key in the ledger (a submit's: its answer's grade, recorded once), so a client reconnecting with the
// task_id gets the same result, on any replica and after a restart: the call is run again under its
// key, which answers the recorded result (or waits for the running one). Sessions are kept by the
// store (door_sessions), read from it per request, and deleted after RFT_ORS_IDLE_MS unused.
import { errors } from '../../errors.js';
import { timeOrderedId } from '../../rollout/ids.js';
import type { DoorSessionRecord } from '../../store/types.js';
import type { DoorCore, Rollout } from '../core.js';
import { recordedRollout, SessionRecords, stored, type Held } from '../session-record.js';

/** What /create asked for: a row by split and index, maybe with its environment. */
export interface RowRef {
  env: string | undefined;
  split: string;
  index: number;
  /** The run label /create named (x-rft-run, else the body's or its task_spec's `run`). */
  run?: string | undefined;
  /** The /create body as sent (canonical JSON): a retried /create is told from another. */
  body: string;
}

/** The session's state as the store keeps it (JSON). */
interface State {
  row: RowRef | undefined;
  /**
   * Each submit's task_id streamed: the tool and input it was for, to refuse a reconnect with other ones
   * (a tool call's task_id is its key in the ledger, which keeps its tool and input).
   */
  tasks: Record<string, string>;
  /** The rollout was started (its environment and tools are the record's). */
  started: boolean;
  /** Submitted, or the budget ran out: later calls are told the episode is over. */
  finished: boolean;
  /** The task that ended it (its rerun after a failure of ours is not refused), or END_TASK: its client ended it. */
  finishedBy: string | undefined;
  /** A call of it failed on our side for good (RFT_ERR_ORS_CALL_FAILED): lost, never graded unanswered. */
  broken?: boolean;
}

/** A session as read from the store at one version: its changes go through Sessions. */
export interface Session extends Readonly<State> {
  sid: string;
  /** The rollout, once started. */
  rollout: Rollout | undefined;
  held: Held<State>;
}

export class Sessions {
  /** The `finishedBy` of an episode its client ended (/delete, /delete_session) before any answer. */
  static readonly END_TASK = 'session-end';
  private readonly records: SessionRecords<State>;

  constructor(
    private readonly core: DoorCore,
    idleMs: number,
    private readonly door: string,
    onExpire: (r: DoorSessionRecord) => void,
  ) {
    this.records = new SessionRecords<State>(core.store, door, idleMs, () => errors.orsSessionLost(), onExpire);
  }

  async create(): Promise<Session> {
    const sid = timeOrderedId('ors_', 18);
    const state: State = { row: undefined, tasks: {}, started: false, finished: false, finishedBy: undefined };
    // No rollout and no retry key yet (a retried /create_session is a new session): committed, not fsynced;
    // /create's durable write (the rollout opened and bound) covers it.
    return this.of(await this.records.create({ id: sid, traceId: sid, environment: null, tools: [], run: null }, state, 'committed'));
  }

  async get(sid: string | undefined): Promise<Session | undefined> {
    const h = sid === undefined ? undefined : await this.records.read(sid);
    return h && this.of(h);
  }

  /**
   * Removes the session. Committed, not fsynced: the episode's end (a submit's grade, or the unanswered
   * grade /delete runs first) is durable before it; a removal lost to a power loss leaves a session the
   * idle sweep removes again, its episode already ended.
   */
  async delete(sid: string): Promise<DoorSessionRecord | undefined> {
    return this.records.delete(sid, 'committed');
  }

  /** A session the sweep expired (gone from the store): its state, and its rollout if it started (its row from the record). */
  async expired(r: DoorSessionRecord): Promise<{ state: State; rollout: Rollout | undefined }> {
    const state = JSON.parse(r.state) as State;
    if (!state.started) return { state, rollout: undefined };
    const item = (await stored(this.core.store.getRollout(r.traceId)))?.item;
    const rollout = item ? recordedRollout(this.core, this.door, { ...r, item }, state.row?.run) : undefined;
    return { state, rollout };
  }

  /** Marks the session broken by a failure of ours. */
  markBroken(s: Session): Promise<Session> {
    return this.change(s, (st) => (st.broken ? undefined : { ...st, broken: true }));
  }

  /** Sets the session's row unless it has one; the session as it is after. */
  setRow(s: Session, row: RowRef): Promise<Session> {
    return this.change(s, (st) => (st.row ? undefined : { ...st, row }));
  }

  /** Forgets the row set by `row` (its rollout could not start). */
  clearRow(s: Session, row: RowRef): Promise<Session> {
    return this.change(s, (st) => (st.row?.body === row.body && !st.started ? { ...st, row: undefined } : undefined));
  }

  /** Records the session's started rollout, unless one is (another replica's): the session as it is after. */
  async bind(s: Session, rollout: Rollout): Promise<Session> {
    const bound = { environment: rollout.environment ?? null, tools: [...rollout.tools] };
    let ours = false;
    const h = await this.records.change(s.held, (st) => {
      ours = !st.started;
      return ours ? { ...st, started: true, row: st.row && { ...st.row, env: rollout.environment } } : undefined;
    }, { bound });
    return this.of(h, ours ? rollout : s.rollout);
  }

  /** Marks the session used now (ORS's /ping keeps a session alive). */
  touch(s: Session): Promise<Session> {
    return this.change(s, (st) => ({ ...st }));
  }

  /**
   * Records a submit's task_id with its call's fingerprint; `ends`: the episode's end by it too unless
   * something ended it first (the write finish() would make next, made in this one).
   */
  addTask(s: Session, taskId: string, fingerprint: string, ends = false): Promise<Session> {
    return this.change(s, (st) => ({ ...st, tasks: { ...st.tasks, [taskId]: fingerprint }, ...(ends && !st.finished ? { finished: true, finishedBy: taskId } : {}) }));
  }

  /**
   * Ends the episode by this task: a submit takes it before its grade runs (`claim`: false if another
   * task ended it first), a spent budget ends it unless something did already.
   */
  async finish(s: Session, taskId: string, claim: boolean): Promise<boolean> {
    let ok = true;
    await this.change(s, (st) => {
      ok = !st.finished || !claim || st.finishedBy === taskId;
      return st.finished ? undefined : { ...st, finished: true, finishedBy: taskId };
    });
    return ok;
  }

  static mintTaskId(): string {
    return timeOrderedId('', 16, 'hex');
  }

  /** The session of a record; its rollout resumed from the record unless given (one this request started or read). */
  private of(h: Held<State>, known?: Rollout): Session {
    const r = h.record;
    const rollout = !h.state.started
      ? undefined
      : known ?? recordedRollout(this.core, this.door, r, h.state.row?.run);
    return { ...h.state, sid: r.id, rollout, held: h };
  }

  private async change(s: Session, f: (st: State) => State | undefined): Promise<Session> {
    return this.of(await this.records.change(s.held, f), s.rollout);
  }

  close(): void {
    this.records.close();
  }
}
