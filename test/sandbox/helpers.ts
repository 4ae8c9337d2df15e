// Shared setup for sandbox tests: a throwaway sandboxes root that sandbox uids can traverse.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultLimits } from '../../src/sandbox/limits.js';
import type { SandboxLimits, SandboxSpec } from '../../src/sandbox/types.js';

export async function tempRoot(): Promise<{ root: string; cleanup(): Promise<void> }> {
  const base = await mkdtemp(join(tmpdir(), 'rft-sbtest-'));
  await chmod(base, 0o711);
  return { root: join(base, 'sandboxes'), cleanup: () => rm(base, { recursive: true, force: true }) };
}

export const testLimits: SandboxLimits = { ...defaultLimits, wallTimeoutMs: 5_000, diskBytes: 32 * 1024 * 1024, maxFileBytes: 8 * 1024 * 1024 };

export function spec(traceId: string, extra: Partial<SandboxSpec> = {}): SandboxSpec {
  return { traceId, limits: testLimits, labels: {}, ...extra };
}
