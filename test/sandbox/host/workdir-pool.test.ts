import { afterEach, beforeEach, expect, it, describe } from 'vitest';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ProcessDriver } from '../../../src/sandbox/drivers/process/driver.js';
import { workdirLayout } from '../../../src/sandbox/host/workdir.js';
import { spec, tempRoot } from '../helpers.js';

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
