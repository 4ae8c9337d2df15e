// The Docker driver's warm pool (src/sandbox/pool/warm-pool.ts with started containers): it learns a
// step of new rollouts and starts that many containers once the burst is over, hands them to the next
// step's rollouts carrying nothing of any other, shrinks back after the idle timeout, makes room for a
// rollout's own container when the engine is full of warm ones, and places creations by each engine's
// measured rate. On the machine's engine, real containers.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DockerApi } from '../../../../src/sandbox/drivers/docker/api.js';
import { DockerDriver, placeCreation } from '../../../../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../../../../src/sandbox/drivers/docker/hosts.js';
import type { Sandbox, SandboxSpec } from '../../../../src/sandbox/types.js';
import { describeIf } from '../../../helpers/require.js';
import { runLabels } from '../../../helpers/run-label.js';
import { waitFor } from '../../../helpers/wait.js';
import { DOCKER_IMAGE, driversPresent, spec } from '../../helpers.js';

describe('placing a creation (placeCreation)', () => {
  const engine = (name: string, o: { up?: boolean; free?: number; ms: number }) => ({ name, up: o.up ?? true, free: o.free ?? 10, expectedCreateMs: () => o.ms });

  it('takes the engine that would finish it first, then the one with the most room; never a full or silent one', () => {
    expect(placeCreation([engine('slow', { ms: 900 }), engine('fast', { ms: 300 })])?.name).toBe('fast');
    expect(placeCreation([engine('a', { ms: 500, free: 3 }), engine('b', { ms: 500, free: 7 })])?.name).toBe('b');
    expect(placeCreation([engine('fast-full', { ms: 100, free: 0 }), engine('fast-down', { ms: 100, up: false }), engine('slow', { ms: 2_000, free: 1 })])?.name).toBe('slow');
    expect(placeCreation([engine('full', { ms: 100, free: 0 })])).toBeUndefined();
  });
});

const present = await driversPresent();
const realCall = DockerApi.prototype.call;
const GAP_MS = 400;
/** Longer than a step takes here on a loaded machine: the pool must not give up on the step before it fills. */
const IDLE_MS = 30_000;

describeIf(present.docker, 'the Docker warm pool', 'docker sandbox driver not available')('Docker warm pool learning the step', () => {
  const open: DockerDriver[] = [];
  afterEach(async () => {
    for (const d of open.splice(0)) await d.close();
  });

  async function driver(cap: number, floor = 0): Promise<{ d: DockerDriver; owner: string }> {
    const owner = `pool-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const d = new DockerDriver({
      instanceId: owner,
      image: DOCKER_IMAGE,
      labels: runLabels,
      hosts: parseDockerHosts({ cap }),
      warmPool: floor,
      warmLearning: { maxMb: 512, idleMs: IDLE_MS, cap, gapMs: GAP_MS },
    });
    open.push(d);
    expect(await d.available()).toBe(true);
    return { d, owner };
  }

  /** This owner's containers on the engine (all, or those of one purpose). */
  async function containers(owner: string, purpose?: string): Promise<string[]> {
    const api = new DockerApi('/var/run/docker.sock');
    const label = [`rft-endpoints.instance=${owner}`, ...(purpose ? [`rft-endpoints.purpose=${purpose}`] : [])];
    const res = await api.call<{ Names: string[] }[]>('GET', `/containers/json?all=true&filters=${encodeURIComponent(JSON.stringify({ label }))}`).finally(() => api.close());
    return res.body.map((c) => c.Names[0] ?? '');
  }

  const step = (d: DockerDriver, prefix: string, n: number, extra: Partial<SandboxSpec> = {}): Promise<Sandbox[]> =>
    Promise.all(Array.from({ length: n }, (_, i) => d.create(spec(`${prefix}_${i}`, extra))));

  it('starts the step it saw once the burst is over, hands those containers to the next step fresh, and shrinks back when idle', { timeout: 180_000 }, async () => {
    const { d, owner } = await driver(8);
    const first = await step(d, 'one', 3);
    expect(d.poolStats()).toMatchObject({ hits: 0, misses: 3 });
    // each leaves work behind where a recycled container would keep it: files, a process, a message queue
    for (const sb of first) {
      const r = await sb.exec('echo secret > /workspace/mine.txt; echo secret > /tmp/mine.txt; echo secret > /dev/shm/mine.txt; nohup sleep 300 >/dev/null 2>&1 & echo ok');
      expect(r.stdout).toContain('ok');
    }
    await Promise.all(first.map((sb) => sb.destroy()));
    await waitFor('3 warm containers', async () => ((await containers(owner, 'warm')).length === 3 && d.poolStats().warm === 3 ? true : undefined), 60_000);
    expect(d.poolStats().predicted).toBe(3);

    const second = await step(d, 'two', 3);
    expect(d.poolStats()).toMatchObject({ hits: 3, misses: 3 });
    for (const sb of second) {
      const r = await sb.exec("ls -A /workspace /tmp /dev/shm; cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$'");
      expect(r.stdout).not.toContain('mine.txt');
      expect(r.stdout.split('\n')).toContain('1'); // the container's own idle init only: no sleep of another rollout
    }
    // each got a container of its own
    expect(new Set(second.map((sb) => sb.id)).size).toBe(3);
    await Promise.all(second.map((sb) => sb.destroy()));

    // no new rollout for the idle timeout: training stopped, back to the floor (0)
    await waitFor('the pool back to its floor', async () => ((await containers(owner)).length === 0 && d.poolStats().warm === 0 ? true : undefined), 60_000);
    expect(d.poolStats().kinds[0]!.steps.map((s) => [s.size, s.hits])).toEqual([[3, 0], [3, 3]]);
  });

  it("counts rollouts' containers against the engine's cap, never warm ones: a full step of another kind still gets made", { timeout: 120_000 }, async () => {
    const { d, owner } = await driver(2, 1);
    const small = { limits: { ...spec('x').limits, memoryBytes: 256 * 2 ** 20 } };
    // the floor's refill starts with the step's first rollout, beside the rollouts' own containers
    const a = await step(d, 'a', 2, small);
    await Promise.all(a.map((sb) => sb.destroy()));
    await waitFor('2 warm containers of the first kind', async () => ((await containers(owner, 'warm')).length === 2 ? true : undefined), 60_000);
    // another kind (other limits) at the engine's cap of 2, with 2 warm containers of the first beside it
    const b = await step(d, 'b', 2);
    for (const sb of b) expect((await sb.exec('echo fine')).stdout).toContain('fine');
    expect(d.poolStats()).toMatchObject({ hits: 0, misses: 4 });
    // and the cap holds for rollouts: a third is refused (503) while both are live
    await expect(d.create(spec('b_2'))).rejects.toMatchObject({ statusCode: 503 });
    await Promise.all(b.map((sb) => sb.destroy()));
  });

  it("starts a warm container's agent while it is pooled: a step's first calls make no engine exec (issue 41: steps 2-3)", { timeout: 120_000 }, async () => {
    const { d } = await driver(4);
    // a step of 2 is learned and its containers are prepared (their agents started), then the next step takes them
    await Promise.all((await step(d, 'first', 2)).map((sb) => sb.destroy()));
    await waitFor('2 warm containers', async () => (d.poolStats().warm === 2 ? true : undefined), 60_000);
    const execs: string[] = [];
    const call = vi.spyOn(DockerApi.prototype, 'call').mockImplementation(function (this: DockerApi, ...a: Parameters<DockerApi['call']>) {
      if (a[0] === 'POST' && /\/exec$/.test(a[1].split('?')[0]!)) execs.push(a[1]);
      return realCall.apply(this, a);
    });
    try {
      const taken = await step(d, 'agent', 2);
      for (const [i, sb] of taken.entries()) expect((await sb.exec(`echo r${i}; id -u`)).stdout).toMatch(new RegExp(String.raw`^r${i}\n[1-9][0-9]*\n$`));
      expect(d.poolStats()).toMatchObject({ hits: 2 });
      expect(execs).toEqual([]);
      call.mockRestore();
      // the channel is the rollout's own: its uid's, not root's, and a second call goes over it too
      for (const sb of taken) expect((await sb.exec('id -u')).stdout.trim()).not.toBe('0');
      await Promise.all(taken.map((sb) => sb.destroy()));
    } finally {
      call.mockRestore();
    }
  });
});
