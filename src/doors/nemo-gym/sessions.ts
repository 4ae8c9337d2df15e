// The door's sessions: Gym's client has no call id, so a session's cookie is its rollout and the
// exactly-once key of a tool call is (session, sequence number). A transport retry is byte-identical
// to a deliberate repeat; the one told apart is a request identical to the session's previous one
// whose reply was never completely written (its socket closed first, or it is still running): that
// is the client's retry, answered from the ledger under the previous key. Sessions live in this
// process's memory for the sandbox TTL after their last use (docs/nemo-gym.md says the limits).
import { createHash, randomBytes } from 'node:crypto';
import type { RftError } from '../../errors.js';
import type { Rollout } from '../core.js';

export interface Session {
  token: string;
  rollout: Rollout;
  /** The row's responses_create_params as seeded (canonical JSON): /verify must carry the same. */
  params: string;
  seq: number;
  last: { fingerprint: string; key: string; delivered: boolean } | undefined;
  /** A failure of ours in a tool call: the episode's observations are not the model's, so /verify answers 503 and the trainer reruns it. */
  broken: RftError | undefined;
  lastUsed: number;
  // The control-route rules (docs/nemo-gym.md, "A model's calls to verify and seed_session"):
  /** Every request the session served as a tool call, in order, as /verify's `response.output` must list them. */
  served: ServedCall[];
  /** What /verify recorded (reward and components): a session is graded once, every later /verify gets this. */
  graded: Record<string, unknown> | undefined;
}

/** A tool call as served: the name in its path and its body (canonical JSON; '' for none, as Gym sends `null` arguments). */
export interface ServedCall {
  name: string;
  args: string;
}

/** The record's trace id of a session: derived, so the token (a credential) is never shown in the record. */
export function traceIdOf(token: string): string {
  return `ng_${createHash('sha256').update(token).digest('base64url').slice(0, 24)}`;
}

export class Sessions {
  private readonly byToken = new Map<string, Session>();
  private readonly sweep: NodeJS.Timeout;

  constructor(private readonly ttlMs: number) {
    this.sweep = setInterval(() => this.expire(Date.now()), Math.min(60_000, Math.max(1_000, Math.floor(ttlMs / 4))));
    this.sweep.unref();
  }

  static mint(): string {
    return randomBytes(24).toString('base64url');
  }

  add(token: string, rollout: Rollout, params: string): Session {
    const s: Session = { token, rollout, params, seq: 0, last: undefined, broken: undefined, lastUsed: Date.now(), served: [], graded: undefined };
    this.byToken.set(token, s);
    return s;
  }

  get(token: string | undefined): Session | undefined {
    const s = token === undefined ? undefined : this.byToken.get(token);
    if (s) s.lastUsed = Date.now();
    return s;
  }

  /**
   * The exactly-once key of a tool request: the previous one's for its undelivered identical
   * repeat, a new sequence number otherwise. `delivered` is called once its reply is written whole.
   */
  keyFor(s: Session, fingerprint: string, served?: ServedCall): { key: string; replay: boolean; delivered: () => void } {
    const prev = s.last;
    if (prev && !prev.delivered && prev.fingerprint === fingerprint) return { key: prev.key, replay: true, delivered: () => (prev.delivered = true) };
    const last = { fingerprint, key: `ng-${++s.seq}`, delivered: false };
    s.last = last;
    // A new call (not the client's retry of the previous one) is one /verify must account for.
    if (served) s.served.push(served);
    return { key: last.key, replay: false, delivered: () => (last.delivered = true) };
  }

  private expire(now: number): void {
    for (const [token, s] of this.byToken) if (now - s.lastUsed > this.ttlMs) this.byToken.delete(token);
  }

  close(): void {
    clearInterval(this.sweep);
    this.byToken.clear();
  }
}
