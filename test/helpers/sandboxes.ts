// Real sandboxes for the coding tool and grader tests, one entry per driver this machine has, and a
// ToolContext around a sandbox so a tool's handler runs exactly as the ledger would run it.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import type { z } from 'zod';
import { BwrapDriver, ProcessDriver, defaultLimits } from '../../src/sandbox/index.js';
import { DockerDriver } from '../../src/sandbox/drivers/docker/driver.js';
import type { Sandbox, SandboxDriver, SandboxSpec } from '../../src/sandbox/types.js';
import type { ToolContext, ToolDefinition } from '../../src/registry/define.js';
import { runLabels } from './run-label.js';

export interface DriverCase {
  name: string;
  available: boolean;
  reason: string;
  make(root: string): SandboxDriver;
  /** Its sandboxes come from a warm pool (pooledDriverCases): useDriver checks at the end that the pool served some. */
  pooled?: boolean;
}

export const limits = { ...defaultLimits, wallTimeoutMs: 10_000, diskBytes: 64 * 1024 * 1024, maxFileBytes: 8 * 1024 * 1024, inodes: 4096 };

export function sandboxSpec(traceId: string, extra: Partial<SandboxSpec> = {}): SandboxSpec {
  return { traceId, limits, labels: {}, ...extra };
}

/** Usable = a sandbox can be created and runs a command (stricter than the driver's own probe). */
async function probe(make: (root: string) => SandboxDriver): Promise<boolean> {
  const base = await mkdtemp(join(tmpdir(), 'rft-probe-'));
  await chmod(base, 0o711);
  try {
    const sb = await make(join(base, 'sb')).create(sandboxSpec('trace_probe'));
    try {
      return (await sb.exec(['true'])).exitCode === 0;
    } finally {
      await sb.destroy();
    }
  } catch (e) {
    console.warn(`[probe] ${(e as Error).message}`);
    return false;
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

const bwrap = (root: string, warmPool?: number) => new BwrapDriver({ sandboxesRoot: root, instanceId: 'test-coding', ...(warmPool ? { warmPool } : {}) });
const docker = (root: string, warmPool?: number) =>
  new DockerDriver({
    sandboxesRoot: root,
    instanceId: 'test-coding',
    labels: runLabels,
    image: process.env.RFT_DOCKER_IMAGE ?? 'rft-endpoints-sandbox:latest',
    socketPath: process.env.RFT_DOCKER_SOCKET ?? '/var/run/docker.sock',
    ...(warmPool ? { warmPool } : {}),
  });

export const driverCases: DriverCase[] = [
  { name: 'process', available: true, reason: '', make: (root) => new ProcessDriver({ sandboxesRoot: root, instanceId: 'test-coding' }) },
  { name: 'bwrap', available: await probe((root) => bwrap(root)), reason: 'bubblewrap cannot create a sandbox here', make: (root) => bwrap(root) },
  { name: 'docker', available: await probe((root) => docker(root)), reason: 'no Docker daemon with the sandbox image (run .ci/setup-sandbox.sh)', make: (root) => docker(root) },
];

/**
 * The isolating drivers with a warm pool of two (issue 24): once a first sandbox started the pool,
 * their sandboxes, a rollout's or a grading's, are handed over prepared; a suite run over these
 * checks that a pooled one gives nothing more away than a new one.
 */
export const pooledDriverCases: DriverCase[] = driverCases
  .filter((d) => d.name !== 'process')
  .map((d) => ({ ...d, name: `${d.name}, pooled`, pooled: true, make: (root: string) => (d.name === 'bwrap' ? bwrap(root, 2) : docker(root, 2)) }));

/** A sandboxes root the sandbox uids can traverse, and a host directory outside every workspace. */
export async function tempDirs(): Promise<{ root: string; outside: string; cleanup(): Promise<void> }> {
  const base = await mkdtemp(join(tmpdir(), 'rft-coding-'));
  await chmod(base, 0o711);
  const outside = await mkdtemp(join(tmpdir(), 'rft-outside-'));
  return {
    root: join(base, 'sandboxes'),
    outside,
    cleanup: async () => {
      await rm(base, { recursive: true, force: true });
      await rm(outside, { recursive: true, force: true });
    },
  };
}

export function toolContext(sandbox: Sandbox): ToolContext {
  return {
    traceId: sandbox.traceId,
    callId: 'call_test',
    item: {},
    rollout: { traceId: sandbox.traceId, item: {}, calls: async () => [], budget: async () => ({ used: 0, limit: 50, exceeded: false }) },
    log: pino({ level: 'silent' }),
    signal: new AbortController().signal,
    sandbox: async () => sandbox,
  };
}

/** Validates the arguments with the tool's schema (as the ledger does) and runs the handler. */
export async function runTool<P extends z.ZodType>(tool: ToolDefinition<P>, args: unknown, sandbox: Sandbox): Promise<string> {
  const parsed = tool.parameters.parse(args);
  const out = await tool.handler(parsed, toolContext(sandbox));
  return typeof out === 'string' ? out : JSON.stringify(out);
}

/** Inside a describe: the case's driver on a fresh sandboxes root, removed after the suite. */
export function useDriver(d: DriverCase): { driver: SandboxDriver; dirs: Awaited<ReturnType<typeof tempDirs>> } {
  const ctx = {} as { driver: SandboxDriver; dirs: Awaited<ReturnType<typeof tempDirs>> };
  beforeAll(async () => {
    ctx.dirs = await tempDirs();
    ctx.driver = d.make(ctx.dirs.root);
  });
  afterAll(async () => {
    const hits = ctx.driver?.poolStats?.()?.hits ?? 0;
    // What the pool still holds goes with the driver.
    await ctx.driver?.close?.();
    await ctx.dirs?.cleanup();
    if (d.pooled && hits === 0) throw new Error(`the ${d.name} driver's pool served none of the suite's sandboxes: the suite did not test pooled ones`);
  });
  return ctx;
}
