// What replicas sharing one store coordinate through it (Postgres, src/store/pg-replicas.ts): where
// each rollout's sandbox lives, so any replica can serve any rollout, and the order of a rollout's
// serial tool calls across replicas. A store that serves one process (SQLite) has none of this: the
// sandbox manager and the ledger then keep it in memory.

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

export interface Replicas {
  readonly placements: PlacementStore;
  /**
   * Resolves once no serial call of the rollout that began before `seq` (the calls' own arrival
   * order: a ticket lock whose tickets are seq numbers) is still running on another live replica.
   * Calls of this replica are ordered in memory by the ledger; a dead replica's calls never block.
   */
  serialTurn(traceId: string, seq: number, serialTools: readonly string[], signal: AbortSignal): Promise<void>;
  /**
   * Marks a call interrupted if it is running on a replica that is gone (its restart would do the
   * same): a retry that reached another replica then gets an answer now instead of waiting for that
   * restart, cost given back and `rerunTools` un-begun included: Store.markInterrupted). True if it did.
   */
  interruptOrphan(traceId: string, callId: string, output: string, now: number, rerunTools?: readonly string[]): Promise<boolean>;
}
