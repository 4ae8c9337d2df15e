// A door's sessions as the store keeps them (Store.createSession, table door_sessions): read from it on
// each request, so any replica serves any session and a restart keeps it; a door's state changes by
// compare-and-set on the session's version, applied again to what another request (on any replica)
// wrote first. A session ends `ttlMs` after its last change; every replica sweeps the expired ones.
import { errors, isRftError, type RftError } from '../errors.js';
import type { DoorSessionRecord, NewDoorSession, SessionChange, Store, StoredDoorSession, WriteDurability } from '../store/types.js';
import type { Item } from '../protocol/wire.js';
import type { DoorCore, Rollout } from './core.js';

/** A session as read at one version: its door state parsed, its record (rollout, environment, tools, row). */
export interface Held<S> {
  state: S;
  version: number;
  lastUsed: number;
  record: StoredDoorSession;
}

/** How many times a change is tried against concurrent changes of the same session. */
const CHANGE_ATTEMPTS = 50;
const EXPIRE_BATCH = 1_000;

/** A store failure is ours: 503 (RFT_ERR_STORE), the trainer retries. */
export async function stored<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw isRftError(e) ? e : errors.store((e as Error).message);
  }
}

/** The rollout a session recorded, as this process, another replica or an earlier process started it. */
export function recordedRollout(core: DoorCore, door: string, r: StoredDoorSession, run: string | undefined): Rollout {
  return core.resume({ traceId: r.traceId, door, row: (r.item ?? {}) as Item, environment: r.environment ?? undefined, tools: r.tools, run });
}

export class SessionRecords<S> {
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly store: Store,
    private readonly door: string,
    private readonly ttlMs: number,
    /** The error of a session that went while a change was tried (expired, deleted). */
    private readonly lost: () => RftError,
    /** Told of each session the sweep expired (the replica that expired it alone is told). */
    private readonly onExpire: (r: DoorSessionRecord) => void = () => undefined,
  ) {
    this.sweep = setInterval(() => void this.expire(), Math.min(60_000, Math.max(250, Math.floor(ttlMs / 4))));
    this.sweep.unref();
  }

  /** `durability`: Store.createSession's (default durable). */
  async create(n: Omit<NewDoorSession, 'door' | 'state' | 'createdAt'>, state: S, durability?: WriteDurability): Promise<Held<S>> {
    const now = Date.now();
    const s = { ...n, door: this.door, state: JSON.stringify(state), createdAt: now };
    await stored(this.store.createSession(s, durability));
    return { state, version: 1, lastUsed: now, record: { ...s, version: 1, ended: false, lastUsed: now, item: null } };
  }

  /** The live session (not past its TTL), as the store has it now. */
  async read(id: string): Promise<Held<S> | undefined> {
    const r = await stored(this.store.getSession(this.door, id));
    if (!r || Date.now() - r.lastUsed > this.ttlMs) return undefined;
    return { state: JSON.parse(r.state) as S, version: r.version, lastUsed: r.lastUsed, record: r };
  }

  /**
   * Applies `f` to the session's state by compare-and-set; on a concurrent change it reads the session
   * again and applies `f` to that. `f` returning undefined changes nothing. Returns the session as changed.
   */
  async change(h: Held<S>, f: (st: S) => S | undefined, opts: Omit<SessionChange, 'state'> = {}): Promise<Held<S>> {
    let cur = h;
    for (let attempt = 0; attempt < CHANGE_ATTEMPTS; attempt++) {
      const next = f(cur.state);
      if (next === undefined) return cur;
      const now = Date.now();
      if (await stored(this.store.updateSession(this.door, cur.record.id, cur.version, { ...opts, state: JSON.stringify(next) }, now))) {
        const record = { ...cur.record, ...(opts.bound ?? {}), ended: cur.record.ended || opts.ended === true };
        return { state: next, version: cur.version + 1, lastUsed: now, record };
      }
      const again = await this.read(cur.record.id);
      if (!again) throw this.lost();
      cur = again;
    }
    throw errors.store(`session of ${h.record.traceId}: ${CHANGE_ATTEMPTS} concurrent changes in a row`);
  }

  /** `durability`: Store.deleteSession's (default durable). */
  async delete(id: string, durability?: WriteDurability): Promise<DoorSessionRecord | undefined> {
    return stored(this.store.deleteSession(this.door, id, durability));
  }

  private async expire(): Promise<void> {
    const gone = await this.store.expireSessions(this.door, Date.now() - this.ttlMs, EXPIRE_BATCH).catch(() => []);
    for (const r of gone) this.onExpire(r);
  }

  /** Stops the sweep: the sessions stay in the record for the next process. */
  close(): void {
    clearInterval(this.sweep);
  }
}
