// The harness's time rule (tools/shell.ts; docs/harbor.md "The harness"): a Harbor row's
// `harbor.agent_timeout_sec` ([agent] timeout_sec) counts from the rollout's first call; a command
// gets at most what is left, and one asked for after it is not run. On the process driver (no Docker).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedCall } from '../../src/store/records.js';
import type { Sandbox, SandboxDriver } from '../../src/sandbox/types.js';
import shell from '../../tools/shell.js';
import { driverCases, sandboxSpec, tempDirs, toolContext } from '../helpers/sandboxes.js';

const processCase = driverCases.find((d) => d.name === 'process')!;

describe('the Harbor harness: [agent] timeout_sec', () => {
  let dirs: Awaited<ReturnType<typeof tempDirs>>;
  let driver: SandboxDriver;
  let sb: Sandbox;
  beforeAll(async () => {
    dirs = await tempDirs();
    driver = processCase.make(dirs.root);
    sb = await driver.create(sandboxSpec(`trace_${randomUUID()}`));
  });
  afterAll(async () => {
    await sb?.destroy();
    await dirs.cleanup();
  });

  async function run(args: { command: string; timeout_ms?: number }, agentTimeoutSec: number | undefined, firstCallAgoMs: number | undefined) {
    const base = toolContext(sb);
    const calls = firstCallAgoMs === undefined ? [] : [{ startedAt: Date.now() - firstCallAgoMs } as RecordedCall];
    const item = agentTimeoutSec === undefined ? {} : { harbor: { agent_timeout_sec: agentTimeoutSec } };
    const ctx = { ...base, item, rollout: { ...base.rollout, item, calls: async () => calls } };
    return String(await shell.handler(shell.parameters.parse(args), ctx));
  }

  it('runs a command as before when the row sets no time', async () => {
    expect(await run({ command: 'echo hi' }, undefined, 10_000_000)).toMatch(/^exit_code: 0\n--- stdout ---\nhi/);
  });

  it("cuts a command at what is left of the task's time, and says so", async () => {
    const t0 = Date.now();
    const out = await run({ command: 'sleep 30', timeout_ms: 60_000 }, 10, 9_000);
    expect(out).toMatch(/timed_out: true \(killed after \d+ ms: the task's time limit\)/);
    expect(Date.now() - t0).toBeLessThan(20_000);
  });

  it('runs no command once the time is up: the model is told, nothing is thrown', async () => {
    const out = await run({ command: 'touch ran' }, 5, 6_000);
    expect(out).toMatch(/^not run: the task's time limit \(5 s/);
    expect((await sb.exec('test -e ran && echo yes || echo no')).stdout.trim()).toBe('no');
  });

  it('starts the clock at the first call: the first command of a short limit runs', async () => {
    expect(await run({ command: 'echo first' }, 1, undefined)).toContain('first');
  });
});
