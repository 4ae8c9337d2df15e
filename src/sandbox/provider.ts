// The port the ledger, grading and the doors use (SandboxManager implements it), and the builder of
// the manager the config asks for (or none): the drivers are imported lazily, so a server with
// RFT_SANDBOX=none never touches them.
import type { Logger } from 'pino';
import type { SandboxExtras } from './from-config.js';
import type { SandboxServerConfig } from './settings.js';
import type { Sandbox, SandboxImage, SandboxItem, SandboxStats } from './types.js';
import type { MemoryCosts } from './manager/memory.js';

/** What the ledger, grading and the doors need from the sandbox manager (manager/manager.ts implements it). */
export interface SandboxProvider {
  /** The rollout's sandbox, created on first use; concurrent first calls share one. */
  acquire(traceId: string, item: SandboxItem, signal?: AbortSignal): Promise<Sandbox>;
  /** A sandbox owned by the caller (grading); the caller destroys it. */
  createEphemeral(
    /** `image`: a task image's fresh sandbox (Harbor's separate verifier). */
    opts: { traceId: string; templateDir?: string; files?: Record<string, string>; image?: SandboxImage },
    signal?: AbortSignal,
  ): Promise<Sandbox>;
  /** The rollout was graded: destroy its sandbox after the grace period for grader retries. */
  graded(traceId: string): void;
  destroy(traceId: string): Promise<boolean>;
  /** Calls `listener` whenever a rollout's sandbox is gone (after its grade, its TTL, DELETE, shutdown). */
  onRolloutEnd(listener: (traceId: string) => void): void;
  stats(): SandboxStats;
  close(): Promise<void>;
  /** What each kind a session holds costs, measured (manager/memory.ts): the bridge records its MCP instances there. */
  readonly memory?: MemoryCosts;
  /** Memory held outside any rollout under `key` (a shared MCP instance), as measured; 0 drops it. */
  holdOutside?(key: string, bytes: number): void;
}

export async function createSandboxProvider(config: SandboxServerConfig, log: Logger, extra: SandboxExtras = {}): Promise<SandboxProvider | undefined> {
  if (config.sandbox.driver === 'none') return undefined;
  const { createManagerFromConfig } = await import('./from-config.js');
  return createManagerFromConfig(config, log, extra);
}
