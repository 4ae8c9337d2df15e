// The unit_tests runner's clock (graders/_unit_tests/runner.py, "Time"), on every driver: a case's
// time limit is on its own time, so the machine's load neither fails a correct solution (a CI run at
// load 20 paid 0.8 for a full one) nor, the other way, lets a policy make its grade a discarded
// 5xx: sleeping code, work spread over many processes, and what a case leaves running are still
// the case's; a case the machine kept off the CPU fails the grade as ours, unless the rollout's own
// leftovers were what kept the machine busy.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCases } from '../../graders/_unit_tests/run.js';
import { casesSchema, type CasesFile } from '../../graders/_unit_tests/cases.js';
import { RolloutLoad, settleStarved } from '../../graders/_unit_tests/starved.js';
import type { Sandbox, SandboxDriver } from '../../src/sandbox/types.js';
import { describeIf } from '../helpers/require.js';
import { driverMatrix, driversPresent, GVISOR_ENGINE, makeTestDriver, spec, tempRoot, testLimits, type TestDriver } from '../sandbox/helpers.js';

/** What a case gVisor's host kept off the CPU is reported as (graders/_unit_tests/runner.py, unit-tests.ts). */
const STARVED = /^starved: its sandbox got [\d.]+ s of CPU from the host while its cases wanted [\d.]+ s \(timed out after \d+s\)$/;

const present = await driversPresent();
const never = new AbortController().signal;

/**
 * Python that runs until its process has used `s` seconds of CPU: the case's demand in CPU time
 * itself, not in loop iterations calibrated once (a calibration taken while other suites loaded
 * the machine was off by enough for a "starved" case to finish in time: series run 5 of stop 34).
 * From the loop's start: under gVisor, which counts a process's waits for the CPU as its CPU time, a
 * starved interpreter's start alone passed 0.2 s (n stayed 0: "kills what a case leaves running", the `next` case).
 */
const burn = (s: number) => `import time\nn = 0\nt0 = time.process_time()\nwhile time.process_time() - t0 < ${s}: n += 1`;
/** Case code run on the CPU hostLoad() loads. */
const onLoadedCpu = (code: string) => `import os\nos.sched_setaffinity(0, {0})\n${code}`;

const cases = (c: Partial<CasesFile> & Pick<CasesFile, 'cases'>): CasesFile => casesSchema.parse({ parallel: 1, ...c });

/**
 * `n` busy processes on the host's first CPU (outside every sandbox), until stopped; a case that
 * runs `onLoadedCpu` first competes with them there, and the other CPUs stay free for the suites
 * running beside this one. Each in a session of its own, as unrelated load is: with autogroup
 * scheduling (Linux's default) one session's processes weigh as one against the sandbox's session.
 */
async function hostLoad(n: number): Promise<{ stop(): Promise<void>; cpu(): Promise<number> }> {
  const procs: ChildProcess[] = Array.from({ length: n }, () => spawn('taskset', ['-c', '0', process.execPath, '-e', 'for(;;){}'], { stdio: 'ignore', detached: true }));
  // utime and stime of each, in clock ticks (100 a second).
  const ticks = async () => (await Promise.all(procs.map((p) => readFile(`/proc/${p.pid}/stat`, 'utf8').catch(() => '')))).map((st) => st.slice(st.lastIndexOf(')') + 2).split(' ')).map((f) => Number(f[11] ?? 0) + Number(f[12] ?? 0));
  // Past Node's start-up, each burning (a loaded machine may start them slowly).
  const burning = async () => (await ticks()).every((t) => t >= 10);
  for (const end = Date.now() + 30_000; !(await burning()) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50));
  return {
    /** Seconds of CPU the burners have used so far, together. */
    async cpu() {
      return (await ticks()).reduce((a, b) => a + b, 0) / 100;
    },
    async stop() {
      await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(null) : (p.once('exit', r), p.kill('SIGKILL'))))));
    },
  };
}

/**
 * Pins a sandbox to the CPU hostLoad() loads, from the host: under gVisor the case's own
 * sched_setaffinity (onLoadedCpu) stays inside its kernel, so the container's host threads are
 * pinned with its cgroup's cpuset (runsc refuses `docker update`; the engine is this machine's).
 */
function pinToLoadedCpu(name: TestDriver, sb: Sandbox): void {
  if (name !== 'gvisor') return;
  const pid = execFileSync('docker', ['-H', GVISOR_ENGINE, 'inspect', '-f', '{{.State.Pid}}', sb.ref!.container], { encoding: 'utf8' }).trim();
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const v1 = lines.find((l) => /^\d+:cpuset:/.test(l));
  const dir = v1 ? `/sys/fs/cgroup/cpuset${v1.split(':')[2]}` : `/sys/fs/cgroup${(lines.find((l) => l.startsWith('0::')) ?? '0::').slice(3)}`;
  writeFileSync(join(dir, 'cpuset.cpus'), '0');
}

for (const name of driverMatrix()) {
  describeIf(present[name], `${name} sandbox driver`, `${name} sandbox driver not available`)(`unit_tests case time (${name})`, () => {
    const ctx = {} as { driver: SandboxDriver; tmp: Awaited<ReturnType<typeof tempRoot>> };
    beforeAll(async () => {
      ctx.tmp = await tempRoot();
      ctx.driver = await makeTestDriver(name, { sandboxesRoot: ctx.tmp.root, instanceId: `time-${name}-${process.pid}` });
    });
    afterAll(async () => {
      await ctx.driver?.close?.();
      await ctx.tmp?.cleanup();
    });
    async function inSandbox<T>(fn: (sb: Sandbox) => Promise<T>): Promise<T> {
      const sb = await ctx.driver.create(spec(`trace_time_${name}_${Date.now()}`, { limits: { ...testLimits, wallTimeoutMs: 120_000 } }));
      try {
        return await fn(sb);
      } finally {
        await sb.destroy();
      }
    }

    it('passes a correct case that needs most of its limit in CPU while the machine is loaded (the old wall clock failed it; on gVisor, without schedstat, too)', async () => {
      const load = await hostLoad(4);
      try {
        const r = await inSandbox((sb) => {
          pinToLoadedCpu(name, sb);
          return runCases(sb, cases({ timeout_s: 2, cases: [{ name: 'heavy', code: onLoadedCpu(burn(0.8)), expr: 'n > 0', expect: true }] }), never);
        });
        // gVisor: when the host gave the sandbox less than half the CPU its case wanted (this test's own load
        // beside a loaded machine's), the case is starved, which the grader settles as ours: never the model's.
        if (name === 'gvisor' && r.cases?.[0]?.starved) expect(r.cases[0].detail).toMatch(STARVED);
        else expect(r.cases, JSON.stringify(r)).toEqual([{ name: 'heavy', passed: true, detail: '' }]);
      } finally {
        await load.stop();
      }
    }, 120_000);

    it('times out sleeping code at its limit, loaded or not', async () => {
      const started = Date.now();
      const r = await inSandbox((sb) => runCases(sb, cases({ timeout_s: 1, cases: [{ name: 'sleeps', code: 'import time\ntime.sleep(60)', expr: '1', expect: 1 }] }), never));
      // gVisor, loaded: an interpreter kept off the CPU before it reached its sleep is starved (ours), as above.
      if (name === 'gvisor' && r.cases?.[0]?.starved) expect(r.cases[0].detail).toMatch(STARVED);
      else expect(r.cases).toEqual([{ name: 'sleeps', passed: false, detail: 'timed out after 1s' }]);
      expect(Date.now() - started).toBeLessThan(50_000);
    }, 120_000);

    it("times out work spread over many processes on the CPU of its tree, before it could starve its own main process", async () => {
      // Children in sessions of their own, still under the case: its tree, not its session, is what counts.
      const code = 'import os\nfor _ in range(12):\n    if os.fork() == 0:\n        os.setsid()\n        while True: pass\nwhile True: pass';
      const r = await inSandbox((sb) => runCases(sb, cases({ timeout_s: 2, cases: [{ name: 'forks', code, expr: '1', expect: 1 }] }), never));
      // gVisor counts waiting for a CPU as CPU time: its 13 processes pass the limit in a second of wall
      // time, before their sandbox's real CPU tells anything; when the host gave that sandbox less than
      // half of the 2 CPUs they wanted (a loaded machine), the case was starved, which the grader settles.
      if (name === 'gvisor' && r.cases?.[0]?.starved) expect(r.cases[0].detail).toMatch(STARVED);
      else expect(r.cases).toEqual([{ name: 'forks', passed: false, detail: 'timed out after 2s' }]);
    }, 120_000);

    it('kills what a case leaves running, so it cannot starve the next case into a failed grade of ours', async () => {
      // Detached (double fork, own session) CPU burners: out of the case's process group and session,
      // burning from half a second on, while the next cases run.
      const leave = 'import os, time\nfor _ in range(8):\n    if os.fork() == 0:\n        os.setsid()\n        if os.fork() == 0:\n            time.sleep(0.5)\n            while True: pass\n        os._exit(0)\n    else:\n        os.wait()';
      // A later case lists what is left of the earlier cases' processes (forks of a case's interpreter,
      // as itself; exited ones excepted), after the runner has looked a few times.
      const count = [
        'import os, time',
        'time.sleep(1)',
        'mine = open("/proc/self/cmdline", "rb").read()',
        'n = []',
        'for p in os.listdir("/proc"):',
        '    if p.isdigit() and int(p) != os.getpid():',
        '        try:',
        // the process driver shares the host's /proc: other sandboxes' cases run as other uids
        '            if os.stat("/proc/%s" % p).st_uid != os.getuid(): continue',
        '            alive = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[0] != "Z"',
        '            if alive and open("/proc/%s/cmdline" % p, "rb").read() == mine: n.append(int(p))',
        '        except OSError:',
        '            pass',
      ].join('\n');
      const r = await inSandbox((sb) =>
        runCases(
          sb,
          cases({
            timeout_s: 10,
            cases: [
              { name: 'leaves', code: leave, expr: '1', expect: 1 },
              { name: 'next', code: burn(0.2), expr: 'n > 0', expect: true },
              { name: 'after', code: count, expr: 'n', expect: [] },
            ],
          }),
          never,
        ),
      );
      expect(r.cases).toEqual([
        { name: 'leaves', passed: true, detail: '' },
        { name: 'next', passed: true, detail: '' },
        { name: 'after', passed: true, detail: '' },
      ]);
    }, 120_000);

    it('reports a case the machine kept off the CPU as starved, and the grade fails as ours (RFT_ERR_GRADER_FAILED) when the rollout was idle (on gVisor, without schedstat, too)', async () => {
      const load = await hostLoad(6);
      try {
        // Its limit 1 s, starved past 2 s: its 0.5 s of CPU would need over a quarter of a CPU, and it gets
        // a seventh of one.
        const [t0, cpu0] = [Date.now(), await load.cpu()];
        const r = await inSandbox((sb) => {
          pinToLoadedCpu(name, sb);
          // gVisor counts the time a process wanted the CPU as CPU time (burn() would end at once): there
          // a case that always wants it, which timed out before the host's count was asked (the CI failure).
          const code = name === 'gvisor' ? 'while True: pass' : onLoadedCpu(burn(0.5));
          return runCases(sb, cases({ timeout_s: 1, cases: [{ name: 'starved', code, expr: 'n > 0', expect: true }] }), never, 2);
        });
        // Should it fail again: whether the burners really held CPU 0 meanwhile.
        const held = `${JSON.stringify(r)}; the burners used ${((await load.cpu()) - cpu0).toFixed(2)} s of CPU in ${((Date.now() - t0) / 1000).toFixed(2)} s`;
        expect(r.cases, held).toMatchObject([{ name: 'starved', passed: false, starved: true }]);
        await inSandbox(async (rollout) => {
          const watch = new RolloutLoad(rollout);
          const settled = await settleStarved(r.cases!, watch).catch((e: unknown) => e);
          expect(settled, JSON.stringify(settled)).toMatchObject({ code: 'RFT_ERR_GRADER_FAILED', statusCode: 500 });
        });
      } finally {
        await load.stop();
      }
    }, 120_000);

    it("scores no case when a case stops the runner, well before the grader's own timeout (a 5xx that would discard the rollout)", async () => {
      const started = Date.now();
      const r = await inSandbox((sb) => runCases(sb, cases({ timeout_s: 1, cases: [{ name: 'stops', code: 'import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)', expr: '1', expect: 1 }] }), never));
      expect(r.cases).toBeNull();
      expect(r.failure).toMatch(/^the test runner gave no result \(timed out after 33000 ms\)/);
      expect(Date.now() - started).toBeLessThan(100_000);
    }, 150_000);

    it("charges the starved cases to the rollout when its own leftover processes kept the machine busy, whatever they do when looked at", async () => {
      const starved = [{ name: 'starved', passed: false, detail: 'starved: 0.1s of CPU in 1s', starved: true }, { name: 'fine', passed: true, detail: '' }];
      await inSandbox(async (rollout) => {
        for (let i = 0; i < 2; i++) await rollout.spawn(['python3', '-c', 'while True: pass']);
        const watch = new RolloutLoad(rollout);
        await new Promise((r) => setTimeout(r, 1_500));
        expect(await settleStarved(starved, watch)).toEqual([
          { name: 'starved', passed: false, detail: "timed out: the rollout's own processes, still running in its sandbox, kept the machine busy" },
          { name: 'fine', passed: true, detail: '' },
        ]);
      });
    }, 120_000);
  });
}

describe('settling starved cases', () => {
  it('leaves results without a starved case as they are, without measuring anything', async () => {
    const results = [{ name: 'a', passed: false, detail: 'timed out after 1s' }];
    expect(await settleStarved(results, undefined)).toBe(results);
  });
});
