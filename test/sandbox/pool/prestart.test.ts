// Processes the warm pool's sandboxes start before a rollout takes them (SandboxSpec.prestarts: the
// rollout MCP servers', issue 24), on every driver with a pool (bwrap, process, Docker under runc, whose
// processes the host's /proc shows): a rollout that takes one finds its
// process running and talks to it; only the floor's worth of pooled sandboxes carries one, whatever
// size the pool learns; a sandbox taken by anything but a rollout (a grading sandbox) has none running;
// one that exited while pooled is not handed out; nothing is left once the sandboxes and the driver go.
import { once } from 'node:events';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ProcessDriver } from '../../../src/sandbox/drivers/process/driver.js';
import { BwrapDriver } from '../../../src/sandbox/drivers/bwrap/driver.js';
import { DockerDriver } from '../../../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../../../src/sandbox/drivers/docker/hosts.js';
import type { PrestartSpec, Sandbox, SandboxDriver, SandboxProcess } from '../../../src/sandbox/types.js';
import { describeIf } from '../../helpers/require.js';
import { runLabels } from '../../helpers/run-label.js';
import { waitFor } from '../../helpers/wait.js';
import { pidsWith, until } from '../../mcp/helpers.js';
import { DOCKER_IMAGE, driversPresent, spec, tempRoot } from '../helpers.js';

const present = await driversPresent();

for (const name of ['bwrap', 'process', 'docker'] as const) {
  describeIf(present[name], `prestarted processes on ${name}`, `${name} sandbox driver not available`)(`warm pool prestarts (${name})`, () => {
    let tmp: Awaited<ReturnType<typeof tempRoot>>;
    let driver: SandboxDriver;
    let marker: string;
    const made: Sandbox[] = [];
    beforeEach(async () => {
      tmp = await tempRoot();
      marker = `prestart-${name}-${process.pid}-${Math.random().toString(36).slice(2)}`;
      const warmLearning = { maxMb: 100, cap: 100, idleMs: 600_000, gapMs: 300 };
      const opts = { sandboxesRoot: tmp.root, instanceId: `prestart-${name}-${process.pid}`, warmPool: 2, warmLearning };
      driver =
        name === 'docker'
          ? new DockerDriver({ instanceId: opts.instanceId, image: DOCKER_IMAGE, labels: runLabels, hosts: parseDockerHosts({ cap: 100 }), warmPool: 2, warmLearning })
          : name === 'bwrap'
            ? new BwrapDriver(opts)
            : new ProcessDriver(opts);
      expect(await driver.available()).toBe(true);
    });
    afterEach(async () => {
      await Promise.all(made.splice(0).map((s) => s.destroy().catch(() => {})));
      await driver.close?.();
      await tmp.cleanup();
      expect(await pidsWith(marker)).toEqual([]);
    });

    /** An echo server (what it reads on stdin it writes back), made ready in the pool by one exchange whose answer is handed over. */
    const echo = (): PrestartSpec[] => [
      {
        key: 'srv',
        argv: ['node', '-e', 'process.stdin.pipe(process.stdout)', marker],
        ready: async (proc) => {
          const answer = once(proc.stdout, 'data');
          proc.stdin.write('hello\n');
          return `ready: ${String((await answer)[0])}`;
        },
      },
    ];
    const create = async (traceId: string, extra: Parameters<typeof spec>[1]): Promise<Sandbox> => {
      const sb = await driver.create(spec(traceId, extra));
      made.push(sb);
      return sb;
    };
    const rollout = (traceId: string, prestarts = echo()) => create(traceId, { prestarts });
    /** Running is not ready: a pooled sandbox joins the pool once its processes' ready step is done. */
    const pooledReady = (n: number) => waitFor(`${n} pooled sandboxes ready`, () => (driver.poolStats!()?.warm === n ? true : undefined), 60_000, 100);
    const running = async (n: number, what: string) => {
      let seen: number[] = [];
      await until(async () => (seen = await pidsWith(marker)).length === n, 30_000, what).catch((e: Error) => {
        throw new Error(`${e.message}: ${seen.length} running, pool ${JSON.stringify(driver.poolStats!())}`);
      });
    };

    it("hands a rollout the pooled sandbox's running process, once; only the floor's worth of the pool carries one", { timeout: 120_000 }, async () => {
      const first = await rollout('trace_1');
      expect(first.claimPrestarted?.('srv')).toBeNull(); // made on demand: nothing started ahead
      await running(2, 'the floor of two pooled sandboxes with their process');
      await pooledReady(2);
      const second = await rollout('trace_2');
      const claimed = second.claimPrestarted!('srv');
      expect(claimed).not.toBeNull();
      expect(claimed!.ready).toBe('ready: hello\n');
      const proc = claimed!.process;
      expect(second.claimPrestarted!('srv')).toBeNull();
      expect(second.claimPrestarted!('other')).toBeNull();
      const echoed = once(proc.stdout, 'data');
      proc.stdin.write('ping\n');
      expect(String((await echoed)[0])).toBe('ping\n');
      await running(3, 'the refill: the claimed one and the floor again');
      await pooledReady(2);

      // A step of 6: the pool learns it, and still only two of what it prepares start a process. The
      // step takes the two that had one first (what a rollout prefers) and leaves them running.
      const step = await Promise.all(Array.from({ length: 6 }, (_, i) => rollout(`trace_step_${i}`)));
      expect(step.filter((sb) => sb.claimPrestarted!('srv') !== null)).toHaveLength(2);
      const settled = () => {
        const st = driver.poolStats!();
        return st && st.target > 2 && st.warm === st.target ? st : undefined;
      };
      await waitFor('the pool to fill to the step it learned', settled).catch((e: Error) => {
        throw new Error(`${e.message}: ${JSON.stringify(driver.poolStats!())}`);
      });
      await running(1 + 2 + 2, 'the claimed one, the two taken by the step, the floor');
      await new Promise((r) => setTimeout(r, 500));
      expect(settled()).toBeDefined();
      expect(await pidsWith(marker)).toHaveLength(5);
      // A sandbox's process goes with it.
      await Promise.all(made.splice(0).map((s) => s.destroy()));
      await running(2, "the pool's two after every rollout's sandbox went");
    });

    it('stops the process of a pooled sandbox taken by anything but a rollout (a grading sandbox)', async () => {
      await rollout('trace_1');
      await running(2, 'the floor of two pooled sandboxes with their process');
      await pooledReady(2);
      const pooled = await pidsWith(marker);
      const grading = await create('grade_1', {});
      expect(grading.claimPrestarted?.('srv') ?? null).toBeNull();
      const now = await pidsWith(marker);
      // One of the two is gone with the hand-over (the refill may have started another already).
      expect(pooled.filter((p) => now.includes(p))).toHaveLength(1);
    });

    it('stops a process that could not be made ready, and hands out none', async () => {
      const unready: PrestartSpec[] = [{ key: 'srv', argv: ['node', '-e', 'setInterval(() => {}, 1e6)', marker], ready: () => Promise.reject(new Error('no handshake')) }];
      await rollout('trace_1', unready);
      await waitFor('the floor prepared', () => (driver.poolStats!()?.warm === 2 ? true : undefined));
      expect(await pidsWith(marker)).toEqual([]);
      const second = await rollout('trace_2', unready);
      expect(second.claimPrestarted!('srv')).toBeNull();
    });

    it('hands out no process that exited while its sandbox was pooled', async () => {
      // (each pooled process kept by its ready step, to wait for the end its sandbox reports, not only for
      // /proc: on a loaded machine the report may come later, and the pool knows an exit by it)
      const pooled: SandboxProcess[] = [];
      const brief: PrestartSpec[] = [{ key: 'srv', argv: ['node', '-e', 'setTimeout(() => {}, 200)', marker], ready: async (proc) => void pooled.push(proc) }];
      await rollout('trace_1', brief);
      await waitFor('the floor prepared', () => (driver.poolStats!()?.warm === 2 ? true : undefined));
      await running(0, 'the pooled processes to exit');
      expect(pooled).toHaveLength(2);
      await Promise.all(pooled.map((p) => p.exited));
      const second = await rollout('trace_2', brief);
      expect(second.claimPrestarted!('srv')).toBeNull();
    });
  });
}
