// The door's sessions: Gym's client has no call id, so a session's cookie is its rollout and the
// exactly-once key of a tool call is (session, sequence number). A transport retry is byte-identical
// to a deliberate repeat; the one told apart is a request identical to the session's previous one
// whose reply was never completely written (its socket closed first, or it is still running): that
// is the client's retry, answered from the ledger under the previous key. Sessions are kept by the
// store (door_sessions, under the token's hash: the token is a credential), so any replica serves
// any session and a restart keeps them; each is read from it per request, and its state changes by
// compare-and-set. A session ends the sandbox TTL after its last use (docs/nemo-gym.md).
import { createHash, randomBytes } from 'node:crypto';
import { errors } from '../../errors.js';
import type { Item } from '../../protocol/wire.js';
import type { DoorCore, Rollout } from '../core.js';
import { SessionRecords, type Held } from '../session-record.js';

/** The session's state as the store keeps it (JSON). */
interface State {
  /** The row's responses_create_params as seeded (canonical JSON): /verify must carry the same. */
  params: string;
  seq: number;
  last: { fingerprint: string; key: string; delivered: boolean; abandoned?: boolean } | undefined;
  /** A failure of ours in a tool call: the episode's observations are not the model's, so /verify answers 503 and the trainer reruns it. */
  broken: { code: string } | undefined;
  // The control-route rules (docs/nemo-gym.md, "A model's calls to the control routes"):
  /**
   * Every request the session served as a tool call, in order, as /verify's `response.output` must list
   * them: appended in the versioned write that claims the call's sequence number, so no replica loses one.
   */
  served: ServedCall[];
  /** What /verify recorded (reward and components): a session is graded once, every later /verify gets this. */
  graded: Record<string, unknown> | undefined;
}

/**
 * A tool call as served: the name in its path and its body's digest (argsDigest of its canonical JSON; of ''
 * for none, as Gym sends `null` arguments): a digest, so a long episode's record stays small.
 */
export interface ServedCall {
  name: string;
  args: string;
}

/** A served call's arguments as the record keeps them: the digest of their canonical JSON ('' for none). */
export const argsDigest = (canonical: string): string => createHash('sha256').update(canonical).digest('base64url');

/** A session as read from the store at one version: its changes go through Sessions. */
export interface Session extends Readonly<State> {
  token: string;
  rollout: Rollout;
  held: Held<State>;
}

/** How long a request identical to the previous one waits to learn whether that one's reply was delivered. */
const DELIVERY_WAIT_MS = 2_000;
const DELIVERY_POLL_MS = 15;

const hashOf = (token: string): string => createHash('sha256').update(token).digest('base64url');

/** The record's trace id of a session: derived, so the token (a credential) is never shown in the record. */
export function traceIdOf(token: string): string {
  return `ng_${hashOf(token).slice(0, 24)}`;
}

export class Sessions {
  private readonly records: SessionRecords<State>;

  constructor(
    private readonly core: DoorCore,
    ttlMs: number,
    private readonly door: string,
  ) {
    this.records = new SessionRecords<State>(core.store, door, ttlMs, () => errors.nemoGymSessionLost());
  }

  static mint(): string {
    return randomBytes(24).toString('base64url');
  }

  async add(token: string, rollout: Rollout, params: string, run: string | undefined): Promise<Session> {
    const state: State = { params, seq: 0, last: undefined, broken: undefined, served: [], graded: undefined };
    const h = await this.records.create(
      { id: hashOf(token), traceId: rollout.traceId, environment: rollout.environment ?? null, tools: [...rollout.tools], run: run ?? null },
      state,
    );
    return { ...state, token, rollout, held: h };
  }

  /** The live session of a token (not past its TTL), as the store has it now. */
  async get(token: string | undefined): Promise<Session | undefined> {
    const h = token === undefined ? undefined : await this.records.read(hashOf(token));
    if (!h) return undefined;
    const r = h.record;
    const rollout = this.core.resume({ traceId: r.traceId, door: this.door, row: (r.item ?? {}) as Item, environment: r.environment ?? undefined, tools: r.tools, run: r.run ?? undefined });
    return { ...h.state, token: token!, rollout, held: h };
  }

  /**
   * The exactly-once key of a tool request: the previous one's for its undelivered identical
   * repeat, a new sequence number otherwise. Of its reply, `delivered` is called once it is written
   * whole, `abandoned` if its socket closed first.
   */
  async keyFor(s: Session, fingerprint: string, served?: ServedCall): Promise<{ key: string; replay: boolean; delivered: () => void; abandoned: () => void }> {
    const prev = await this.settled(s, fingerprint);
    let key = '';
    let replay = false;
    const after = await this.change(prev, (st) => {
      const last = st.last;
      replay = last !== undefined && !last.delivered && last.fingerprint === fingerprint;
      if (replay) {
        key = last!.key;
        return undefined;
      }
      key = `ng-${st.seq + 1}`;
      // A new call (not the client's retry of the previous one) is one /verify must account for: listed in
      // the same write that claims its number.
      return { ...st, seq: st.seq + 1, last: { fingerprint, key, delivered: false, abandoned: false }, served: served ? [...st.served, served] : st.served };
    });
    const mark = (flag: 'delivered' | 'abandoned') => () =>
      void this.change(after, (st) => (st.last?.key === key && !st.last[flag] ? { ...st, last: { ...st.last, [flag]: true } } : undefined)).catch(() => undefined);
    return { key, replay, delivered: mark('delivered'), abandoned: mark('abandoned') };
  }

  /**
   * The session once the fate of its previous request's reply is recorded, when this request is
   * identical to it: that reply's `delivered` (or `abandoned`) is written when its socket says so, which
   * another replica may see after this request arrives (a model repeating a call at once). Waits for it
   * up to DELIVERY_WAIT_MS; after that, the previous reply is taken as undelivered (this is its retry).
   */
  private async settled(s: Session, fingerprint: string): Promise<Session> {
    const deadline = Date.now() + DELIVERY_WAIT_MS;
    let cur = s;
    while (cur.last?.fingerprint === fingerprint && !cur.last.delivered && !cur.last.abandoned && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, DELIVERY_POLL_MS));
      const again = await this.get(cur.token);
      if (!again) throw errors.nemoGymSessionLost();
      cur = again;
    }
    return cur;
  }

  /** A failure of ours in a tool call broke the episode (the first one is kept). */
  async markBroken(s: Session, code: string): Promise<void> {
    await this.change(s, (st) => (st.broken ? undefined : { ...st, broken: { code } }));
  }

  /**
   * /verify graded it: records the grade unless another /verify (on any replica) recorded one first, and
   * returns the one recorded (a session is graded once).
   */
  async markGraded(s: Session, graded: Record<string, unknown>): Promise<Record<string, unknown>> {
    const after = await this.change(s, (st) => (st.graded ? undefined : { ...st, graded }), true);
    return after.graded ?? graded;
  }

  private async change(s: Session, f: (st: State) => State | undefined, ended = false): Promise<Session> {
    const h = await this.records.change(s.held, f, { ended });
    return { ...s, ...h.state, held: h };
  }

  close(): void {
    this.records.close();
  }
}
