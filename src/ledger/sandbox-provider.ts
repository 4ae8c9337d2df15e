// What the ledger and grading need from the sandbox manager (src/sandbox/manager.ts implements it).
import type { Item } from '../protocol/wire.js';
import type { Sandbox, SandboxStats } from '../sandbox/types.js';

export interface SandboxProvider {
  /** The rollout's sandbox, created on first use; concurrent first calls share one. */
  acquire(traceId: string, item: Item, signal?: AbortSignal): Promise<Sandbox>;
  /** A sandbox owned by the caller (grading); the caller destroys it. */
  createEphemeral(
    opts: { traceId: string; templateDir?: string; files?: Record<string, string> },
    signal?: AbortSignal,
  ): Promise<Sandbox>;
  /** The rollout was graded: destroy its sandbox after the grace period for grader retries. */
  graded(traceId: string): void;
  destroy(traceId: string): Promise<boolean>;
  /** Calls `listener` whenever a rollout's sandbox is gone (after its grade, its TTL, DELETE, shutdown). */
  onRolloutEnd(listener: (traceId: string) => void): void;
  stats(): SandboxStats;
  close(): Promise<void>;
}
