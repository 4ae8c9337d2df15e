import { afterEach, beforeEach, expect, it, describe } from 'vitest';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ProcessDriver } from '../../../src/sandbox/drivers/process/driver.js';
import { workdirLayout } from '../../../src/sandbox/host/workdir.js';
import { BwrapDriver } from '../../../src/sandbox/drivers/bwrap/driver.js';
import type { LocalDriver } from '../../../src/sandbox/host/local-driver.js';
import type { Sandbox } from '../../../src/sandbox/types.js';
import { describeIf } from '../../helpers/require.js';
import { waitFor } from '../../helpers/wait.js';
import { driversPresent, spec, tempRoot } from '../helpers.js';

const workdirs = async (root: string) => (await readdir(root).catch(() => [] as string[])).filter((d) => d.startsWith('sb_')).sort();

async function until(cond: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Whether a workdir is fully prepared: its workspace exists and belongs to its uid (if it has one). */
async function prepared(dir: string): Promise<boolean> {
  try {
    const meta = JSON.parse(await readFile(join(dir, 'meta.json'), 'utf8')) as { uid: number | null };
    const ws = await stat(workdirLayout(dir).ws);
    return meta.uid === null || ws.uid === meta.uid;
  } catch {
    return false;
  }
}

describe('warm workdir pool', () => {
  let tmp: Awaited<ReturnType<typeof tempRoot>>;
  let driver: ProcessDriver;
  beforeEach(async () => {
    tmp = await tempRoot();
    driver = new ProcessDriver({ sandboxesRoot: tmp.root, instanceId: 'pool-test', warmPool: 2 });
  });
  afterEach(async () => {
    await driver.close();
    await tmp.cleanup();
  });

  it('prepares workdirs after the first creation and hands one to the next rollout', async () => {
    const first = await driver.create(spec('trace_1'));
    await until(async () => (await workdirs(tmp.root)).length === 3);
    const pooled = (await workdirs(tmp.root)).filter((d) => d !== first.id);
    expect(pooled).toHaveLength(2);
    const second = await driver.create(spec('trace_2', { files: { 'a.txt': 'mine' } }));
    expect(pooled).toContain(second.id);
    expect((await second.readFile('a.txt')).toString()).toBe('mine');
    expect(second.traceId).toBe('trace_2');
    await first.destroy();
    await second.destroy();
  });

  it('keeps pooled workdirs from being reaped and removes them on close', async () => {
    const sb = await driver.create(spec('trace_1'));
    // Wait for the refill to finish, not only for its directories to appear: a workdir still being
    // prepared is not pooled yet (the reaper runs at boot, before any refill, in the server). Its last
    // step gives the workspace to the sandbox's uid; seen done twice in a row, the pool holds it.
    let seen = 0;
    await until(async () => {
      const done = await Promise.all((await workdirs(tmp.root)).map((d) => prepared(join(tmp.root, d))));
      seen = done.length === 3 && done.every(Boolean) ? seen + 1 : 0;
      return seen >= 2;
    });
    expect(await driver.reapOrphans()).toBe(0);
    await sb.destroy();
    await driver.close();
    expect(await workdirs(tmp.root)).toEqual([]);
  });
});


// The learning pool on the real local drivers: its bound from the cap and the memory budget, and what
// a rollout finds in a sandbox it gets from the pool (nothing of any other rollout).
const present = await driversPresent();
for (const name of ['bwrap', 'process'] as const) {
  describeIf(present[name], `the learning pool on ${name}`, `${name} sandbox driver not available`)(`learning warm pool (${name})`, () => {
    let tmp: Awaited<ReturnType<typeof tempRoot>>;
    const open: { close(): Promise<void> }[] = [];
    const made: Sandbox[] = [];
    beforeEach(async () => {
      tmp = await tempRoot();
    });
    afterEach(async () => {
      await Promise.all(made.splice(0).map((s) => s.destroy().catch(() => {})));
      for (const d of open.splice(0)) await d.close();
      await tmp.cleanup();
    });

    /** A driver whose pool learns, with a short burst gap (real time: the test waits on the pool's state). */
    function driverWith(warmLearning: { maxMb: number; cap: number }): LocalDriver {
      const opts = { sandboxesRoot: tmp.root, instanceId: `pool-${name}-${process.pid}`, warmPool: 1, warmLearning: { ...warmLearning, idleMs: 600_000, gapMs: 300 } };
      const d = name === 'bwrap' ? new BwrapDriver(opts) : new ProcessDriver(opts);
      open.push(d);
      return d;
    }

    /** `n` new rollouts at once; their sandboxes. */
    const burst = (d: LocalDriver, prefix: string, n: number, files: (i: number) => Record<string, string> = () => ({})): Promise<Sandbox[]> =>
      Promise.all(Array.from({ length: n }, async (_, i) => {
        const sb = await d.create(spec(`${prefix}_${i}`, { files: files(i) }));
        made.push(sb);
        return sb;
      }));

    it('grows to the step within its memory budget, and within the cap when that is lower', async () => {
      // 3 MB at 768 KB a prepared sandbox: 4; the cap of 3 bounds the other.
      for (const [bound, learning] of [[4, { maxMb: 3, cap: 100 }], [3, { maxMb: 100, cap: 3 }]] as const) {
        const d = driverWith(learning);
        const sbs = await burst(d, `trace_bound${bound}`, 6);
        const ready = await waitFor('the pool to fill', () => (d.poolStats()?.warm === bound ? d.poolStats() : undefined));
        expect(ready).toMatchObject({ target: bound, predicted: 6 });
        // The filler stops at the bound: nothing more is being prepared.
        expect((await workdirs(tmp.root)).length).toBe(6 + bound);
        await Promise.all(sbs.map((s) => s.destroy()));
        await d.close();
      }
    });

    it('hands a rollout a sandbox that carries nothing of another rollout', async () => {
      const d = driverWith({ maxMb: 100, cap: 100 });
      // bwrap: also in the sandbox's /tmp and /dev/shm (the process driver's are the host's).
      const plant = name === 'bwrap' ? 'echo secret > left.txt; echo secret > /tmp/left; echo secret > /dev/shm/left' : 'echo secret > left.txt';
      const first = await burst(d, 'trace_one', 4, (i) => ({ [`mine_${i}.txt`]: 'step one' }));
      for (const sb of first) expect((await sb.exec(plant)).exitCode).toBe(0);
      await waitFor('the pool to learn the step', () => (d.poolStats()?.warm === 4 ? true : undefined));
      const hitsBefore = d.poolStats()!.hits;
      const second = await burst(d, 'trace_two', 4, (i) => ({ [`mine_${i}.txt`]: 'step two' }));
      expect(d.poolStats()!.hits - hitsBefore).toBe(4);
      const firstIds = new Set(first.map((s) => s.id));
      for (const [i, sb] of second.entries()) {
        expect(firstIds.has(sb.id)).toBe(false);
        expect(sb.traceId).toBe(`trace_two_${i}`);
        expect((await sb.listFiles('.')).map((f) => f.path).sort()).toEqual([`mine_${i}.txt`]);
        expect((await sb.exec('ls -A')).stdout).toBe(`mine_${i}.txt\n`);
        if (name === 'bwrap') expect((await sb.exec('ls -A /tmp /dev/shm')).stdout).not.toContain('left');
      }
      // Every rollout had a uid of its own (bwrap as root: what keeps them apart on the host too).
      const uids = await Promise.all([...first, ...second].map(async (sb) => (await sb.exec('id -u')).stdout.trim()));
      if (name === 'bwrap') expect(new Set(uids).size).toBe(8);
      await Promise.all([...first, ...second].map((s) => s.destroy()));
    });
  });
}
