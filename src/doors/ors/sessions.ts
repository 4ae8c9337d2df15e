// The ORS door's sessions: a session id (sid) minted at /create_session is one rollout, bound to its
// row at /create (or at its first /{env}/... call, when /create named no environment: the reference
// client sends split and index only). A call's task_id is minted on receipt and is its exactly-once
// key in the ledger; the session also keeps each task's result in memory, so a client reconnecting
// with the task_id gets the same result, a running call included. Sessions live in this process
// (a restart ends them: their calls answer 503) and are deleted after RFT_ORS_IDLE_MS unused.
import { timeOrderedId } from '../../rollout/ids.js';
import type { Rollout } from '../core.js';

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

/** A call as streamed: its result (the `end` event's JSON) once settled. */
export interface Task {
  /** The tool and input, to refuse a reconnect with other ones under the same task_id. */
  fingerprint: string;
  result: Promise<string>;
  /** Set when the run failed on our side: the next reconnect runs it again (it was not recorded). */
  failed: Error | undefined;
  failures: number;
}

export interface Session {
  sid: string;
  row: RowRef | undefined;
  /** The rollout, once bound (a promise: concurrent first calls share it). */
  rollout: Promise<Rollout> | undefined;
  tasks: Map<string, Task>;
  /** Submitted, or the budget ran out: later calls are told the episode is over. */
  finished: boolean;
  /** The task that ended it (its rerun after a failure of ours is not refused). */
  finishedBy: string | undefined;
  lastUsed: number;
}

export class Sessions {
  private readonly bySid = new Map<string, Session>();
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly idleMs: number,
    private readonly onExpire: (s: Session) => void,
  ) {
    this.sweep = setInterval(() => this.expire(Date.now()), Math.min(5_000, Math.max(250, Math.floor(idleMs / 4))));
    this.sweep.unref();
  }

  create(): Session {
    const sid = timeOrderedId('ors_', 18);
    const s: Session = { sid, row: undefined, rollout: undefined, tasks: new Map(), finished: false, finishedBy: undefined, lastUsed: Date.now() };
    this.bySid.set(sid, s);
    return s;
  }

  get(sid: string | undefined): Session | undefined {
    const s = sid === undefined ? undefined : this.bySid.get(sid);
    if (s) s.lastUsed = Date.now();
    return s;
  }

  delete(sid: string): Session | undefined {
    const s = this.bySid.get(sid);
    this.bySid.delete(sid);
    return s;
  }

  static mintTaskId(): string {
    return timeOrderedId('', 16, 'hex');
  }

  private expire(now: number): void {
    for (const [sid, s] of this.bySid) {
      if (now - s.lastUsed <= this.idleMs) continue;
      this.bySid.delete(sid);
      this.onExpire(s);
    }
  }

  close(): Session[] {
    clearInterval(this.sweep);
    const all = [...this.bySid.values()];
    this.bySid.clear();
    return all;
  }
}
