// The port the sandbox manager shares rollouts' sandboxes through, when replicas share one store
// (the Postgres store implements it: src/store/pg-replicas.ts): where each rollout's sandbox lives,
// so any replica can serve any rollout. Without it (SQLite, one process) the manager keeps it in memory.

/** Where a rollout's sandbox is: an engine (by its configured name) and a container; null while being created. */
export interface Placement {
  traceId: string;
  /** The replica that created it (or is creating it), which sweeps it when idle. */
  owner: string;
  engine: string | null;
  container: string | null;
  lastUsed: number;
}

export type Claim =
  /** No sandbox: the caller creates it, then records it with place() (or gives up with release()). */
  | { kind: 'mine' }
  /** It exists: open it there. */
  | { kind: 'placed'; engine: string; container: string; owner: string }
  /** Another live replica is creating it: ask again shortly. */
  | { kind: 'busy' };

export interface PlacementStore {
  /**
   * The rollout's sandbox, or the right to create it. A creation left unfinished by a replica that
   * is gone (or by this one before a restart) is handed over.
   */
  claim(traceId: string, owner: string, now: number): Promise<Claim>;
  /** Records the sandbox the claim created; false when the claim was taken over meanwhile. */
  place(traceId: string, owner: string, engine: string, container: string, now: number): Promise<boolean>;
  /** Drops the record of `container`, or (container null) an unfinished claim of `owner`. */
  release(traceId: string, container: string | null, owner: string): Promise<void>;
  /** The sandbox was used now (coalesced by the caller: the sweep allows for it). */
  touch(traceId: string, now: number): Promise<void>;
  get(traceId: string): Promise<Placement | undefined>;
  /** Sandboxes unused since `before` that `owner` should remove: its own, and those of replicas that are gone. */
  idle(owner: string, before: number): Promise<Placement[]>;
  /** Containers recorded for `owner` (kept when it reaps its leftovers at start). */
  containersOf(owner: string): Promise<Set<string>>;
  /** Whether `owner` is a replica of this store running now (it holds its liveness lock). */
  isLive(owner: string): Promise<boolean>;
}
