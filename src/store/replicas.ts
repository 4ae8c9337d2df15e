// What replicas sharing one store coordinate through it (Postgres, src/store/pg-replicas.ts): where
// each rollout's sandbox lives, so any replica can serve any rollout, and the order of a rollout's
// serial tool calls across replicas. A store that serves one process (SQLite) has none of this: the
// sandbox manager and the ledger then keep it in memory.
import type { PlacementStore } from '../sandbox/placements.js';

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
