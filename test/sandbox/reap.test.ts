import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DockerApi } from '../../src/sandbox/drivers/docker/api.js';
import { SandboxManager } from '../../src/sandbox/manager/manager.js';
import { selectDriver, type DriverName } from '../../src/sandbox/select.js';
import { canSwitchUid } from '../../src/sandbox/host/uids.js';
import { describeIf } from '../helpers/require.js';
import { driversPresent, liveProcessesOf, tempRoot, testLimits, until } from './helpers.js';
import { runLabels } from '../helpers/run-label.js';

async function crashChild(driver: DriverName, root: string, instanceId: string, pool = false): Promise<{ id: string }[]> {
  const args = [driver, root, instanceId, ...(pool ? ['pool'] : [])];
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'crash-child.ts'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`crash child exited early with ${code}`)));
  });
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  return JSON.parse(line) as { id: string }[];
}

const UID_CLAIMS = '/run/rft-endpoints/uids';

const present = await driversPresent();

for (const name of ['process', 'bwrap', 'docker'] as const) {
  describeIf(present[name], `orphan reaping with the ${name} driver`, `${name} sandbox driver not available`)(`orphan reaping (${name})`, () => {
    let root: Awaited<ReturnType<typeof tempRoot>>;
    beforeAll(async () => {
      root = await tempRoot();
    });
    afterAll(() => root.cleanup());

    it('removes what a SIGKILLed server left behind, processes included, on the next start()', { timeout: 90_000 }, async () => {
      const instanceId = `reap-${name}-${process.pid}`;
      const left = await crashChild(name, root.root, instanceId);
      expect(left).toHaveLength(2);
      const uids: number[] = [];
      const containers = async (): Promise<unknown[]> => {
        const api = new DockerApi('/var/run/docker.sock');
        const filters = encodeURIComponent(JSON.stringify({ label: [`rft-endpoints.instance=${instanceId}`] }));
        return (await api.call<unknown[]>('GET', `/containers/json?all=true&filters=${filters}`).finally(() => api.close())).body;
      };
      if (name === 'docker') expect(await containers()).toHaveLength(2);
      for (const { id } of left) {
        if (name === 'docker') break; // nothing of a Docker sandbox is on the server's disk
        const meta = JSON.parse(await readFile(join(root.root, id, 'meta.json'), 'utf8')) as { uid: number | null };
        if (meta.uid !== null) uids.push(meta.uid);
      }
      // bwrap's sandboxes die with their parent; the others' commands outlive the crash.
      if (canSwitchUid() && name !== 'bwrap') {
        const alive = await Promise.all(uids.map(liveProcessesOf));
        expect(alive.every((p) => p.length > 0)).toBe(true);
      }
      const m = new SandboxManager({
        driver: await selectDriver(name, { sandboxesRoot: root.root, instanceId, dockerLabels: runLabels }),
        limits: testLimits,
        cap: 4,
        maxQueue: 4,
        queueTimeoutMs: 1000,
        ttlMs: 60_000,
        graceMs: 60_000,
        instanceId,
        templatesRoot: root.root,
      });
      await m.start();
      expect(m.stats().reaped).toBeGreaterThanOrEqual(2);
      for (const { id } of left) expect(existsSync(join(root.root, id))).toBe(false);
      if (name === 'docker') expect(await containers()).toEqual([]);
      // Killed processes finish exiting on the kernel's time (a torn-down PID namespace's members
      // are SIGKILLed asynchronously; a CI run saw one still exiting): wait for that, bounded.
      if (canSwitchUid()) for (const uid of uids) await until(async () => (await liveProcessesOf(uid)).length === 0, 10_000);
      await m.close();
    });

    it('removes a full warm pool a SIGKILLed server left, with its uid claims', { timeout: 90_000 }, async () => {
      const instanceId = `reap-pool-${name}-${process.pid}`;
      await crashChild(name, root.root, instanceId, true);
      if (name === 'docker') {
        const containers = async (purpose?: string): Promise<unknown[]> => {
          const api = new DockerApi('/var/run/docker.sock');
          const filters = encodeURIComponent(JSON.stringify({ label: [`rft-endpoints.instance=${instanceId}`, ...(purpose ? [`rft-endpoints.purpose=${purpose}`] : [])] }));
          return (await api.call<unknown[]>('GET', `/containers/json?all=true&filters=${filters}`).finally(() => api.close())).body;
        };
        // 2 rollouts' and 3 warm (a rollout may have taken a warm one: its container keeps that label)
        expect(await containers()).toHaveLength(5);
        expect((await containers('warm')).length).toBeGreaterThanOrEqual(3);
        const driver = await selectDriver(name, { sandboxesRoot: root.root, instanceId, dockerLabels: runLabels });
        expect(await driver.reapOrphans()).toBe(5);
        expect(await containers()).toEqual([]);
        await driver.close?.();
        return;
      }
      const dirs = (await readdir(root.root)).filter((d) => d.startsWith('sb_'));
      expect(dirs).toHaveLength(5); // 2 rollouts' and 3 prepared
      const uids: number[] = [];
      for (const d of dirs) {
        const meta = JSON.parse(await readFile(join(root.root, d, 'meta.json'), 'utf8')) as { uid: number | null };
        if (meta.uid !== null) uids.push(meta.uid);
      }
      const driver = await selectDriver(name, { sandboxesRoot: root.root, instanceId });
      expect(await driver.reapOrphans()).toBe(5);
      expect((await readdir(root.root)).filter((d) => d.startsWith('sb_'))).toEqual([]);
      for (const uid of uids) expect(existsSync(join(UID_CLAIMS, String(uid)))).toBe(false);
      if (canSwitchUid()) for (const uid of uids) await until(async () => (await liveProcessesOf(uid)).length === 0, 10_000);
      await driver.close?.();
    });
  });
}
