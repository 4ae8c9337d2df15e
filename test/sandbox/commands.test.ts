// A sandbox's commands as separate units: each one's processes die with it even while other
// commands of the same rollout run, commands cannot see or signal one another, and what the bwrap
// driver keeps per rollout (the holder, the supervisor) is out of the commands' reach and, when it
// fails, fails as the server's fault (503), never as the command's.
import { readdir, readFile } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it, onTestFinished } from 'vitest';
import { canSwitchUid } from '../../src/sandbox/host/uids.js';
import type { Sandbox, SandboxDriver } from '../../src/sandbox/types.js';
import { describeIf } from '../helpers/require.js';
import { driversPresent, hostView, liveProcessesOf, makeTestDriver, pidsWith, spec, tempRoot, until, type TestDriver } from './helpers.js';

const present = await driversPresent();
const root = canSwitchUid();
/** Rounds of the sweep race (RFT_TEST_RACE_ROUNDS to measure a failure rate). */
const RACE_ROUNDS = Number(process.env.RFT_TEST_RACE_ROUNDS ?? 1);

/** Why a driver does not separate concurrent commands of one sandbox, or null when it does. */
function sharedGap(name: TestDriver): string | null {
  if (name === 'bwrap') return null;
  if (name === 'process') return 'commands share the host and the sandbox uid: leftovers are killed only when no other command runs';
  return "commands share the container's PID and IPC namespaces: leftovers are killed only when no other command runs";
}

/** Host pid and parent of every live process whose command line is exactly `argv`. */
async function processesRunning(argv: string[]): Promise<{ pid: number; ppid: number }[]> {
  const out: { pid: number; ppid: number }[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmd !== argv.map((a) => `${a}\0`).join('')) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (after[0] !== 'Z') out.push({ pid: Number(name), ppid: Number(after[1]) });
  }
  return out;
}

for (const name of ['process', 'bwrap', 'docker'] as const) {
  describeIf(present[name], `commands on ${name}`, `${name} sandbox driver not available`)(`concurrent commands of one sandbox (${name})`, () => {
    let tmp: Awaited<ReturnType<typeof tempRoot>>;
    let driver: SandboxDriver;
    let sb: Sandbox;
    const gap = sharedGap(name);
    const title = (t: string): string => (gap ? `${t} [not on ${name}: ${gap}]` : t);

    beforeAll(async () => {
      tmp = await tempRoot();
      driver = await makeTestDriver(name, { sandboxesRoot: tmp.root, instanceId: `commands-${name}-${process.pid}` });
      sb = await driver.create(spec('trace_commands', { files: { 'kept.txt': 'kept' } }));
    });
    afterAll(async () => {
      await sb?.destroy();
      await driver?.close?.();
      await tmp?.cleanup();
    });

    it('runs many commands at once, each with its own output', { timeout: 90_000 }, async () => {
      // Docker: each exec is a few Engine API round trips; fewer, with room for a loaded machine.
      const n = name === 'docker' ? 12 : 40;
      const rs = await Promise.all(Array.from({ length: n }, (_, i) => sb.exec(`echo out-${i}; echo err-${i} >&2; exit ${i % 7}`, { timeoutMs: 60_000 })));
      rs.forEach((r, i) => expect(r).toMatchObject({ stdout: `out-${i}\n`, stderr: `err-${i}\n`, exitCode: i % 7 }));
    });

    it.skipIf(gap)(title("kills a command's setsid daemon when it ends, while another command of the sandbox still runs"), async () => {
      const marker = `${31_000 + Math.floor(Math.random() * 1000)}`;
      const other = sb.exec('sleep 2; echo other-done');
      const r = await sb.exec(`setsid nohup sleep ${marker} >/dev/null 2>&1 & echo started`);
      expect(r.stdout).toBe('started\n');
      expect(await pidsWith(marker)).toEqual([]);
      expect((await other).stdout).toBe('other-done\n');
    });

    it('the sweep of what a command left never kills another command, and takes the leftovers once none runs', { timeout: 180_000 }, async () => {
      // A command leaves background sleeps, so it sweeps as it ends (alone); a second command starts
      // at an offset swept across the first one's run, so some start while the sweep walks /proc
      // (Docker: a sweep that found no other exec and then ran \`kill -9 -1\` took a wrapper that
      // started in between: its command answered exit 137).
      const marker = `${33_000 + Math.floor(Math.random() * 1000)}`;
      const leave = `i=0; while [ $i -lt 4 ]; do sleep ${marker} & i=$((i+1)); done >/dev/null 2>&1; echo left`;
      const t0 = performance.now();
      expect((await sb.exec(leave)).stdout).toBe('left\n');
      const span = performance.now() - t0;
      const bad: string[] = [];
      for (let round = 0; round < RACE_ROUNDS; round++) {
        for (let k = 0; k < 24; k++) {
          const offset = (span * 1.5 * k) / 24;
          const [left, other] = await Promise.all([
            sb.exec(leave, { timeoutMs: 60_000 }),
            // Spreads the second command's start over the first one's run (not a wait on a condition).
            new Promise((r) => setTimeout(r, offset)).then(() => sb.exec('sleep 0.2; echo ok', { timeoutMs: 60_000 })),
          ]);
          if (left.stdout !== 'left\n' || left.exitCode !== 0) bad.push(`leaver, round ${round} offset ${Math.round(offset)}: exit ${left.exitCode} ${JSON.stringify(left.stdout)}`);
          if (other.stdout !== 'ok\n' || other.exitCode !== 0) bad.push(`round ${round} offset ${Math.round(offset)}: exit ${other.exitCode} ${JSON.stringify(other.stdout)}`);
        }
      }
      expect(bad).toEqual([]);
      // Alone, a command's end sweeps what the others left.
      expect((await sb.exec('true')).exitCode).toBe(0);
      if (name !== 'process' || root) await until(async () => (await pidsWith(marker)).length === 0, 5_000);
    });

    it.skipIf(name !== 'docker')('a sweep from outside the container never kills a command another replica runs in it (the exec path)', { timeout: 60_000 }, async () => {
      // Two replicas with the same container (Postgres placements): the first's command kills its
      // own wrapper and leaves a job holding the output, so that replica sweeps from outside; the
      // other replica's command runs meanwhile, which the first cannot count. The exec path
      // (RFT_DOCKER_AGENT=false, or an image without perl): over the agent, the command's parent is
      // the agent, and killing it ends the rollout's sandbox (test/sandbox/drivers/docker/agent.test.ts).
      const marker = `${34_000 + Math.floor(Math.random() * 1000)}`;
      const execDriver = await makeTestDriver(name, { sandboxesRoot: tmp.root, instanceId: `commands-exec-${process.pid}`, dockerAgent: false });
      const sb = await execDriver.create(spec('trace_commands_exec'));
      onTestFinished(async () => {
        await sb.destroy();
        await execDriver.close?.();
      });
      const ref = sb.ref!;
      const other = await execDriver.attach!('trace_commands_exec', ref, spec('trace_commands_exec').limits);
      const running = other.exec('touch other-started; sleep 2; echo ok', { timeoutMs: 30_000 });
      await until(async () => (await sb.exec('test -e other-started')).exitCode === 0, 10_000);
      // Its own exec answers 137 (the wrapper, its process, was killed): the model's doing.
      await sb.exec(`sleep ${marker} & kill -9 $PPID`, { timeoutMs: 30_000 });
      expect(await running).toMatchObject({ stdout: 'ok\n', exitCode: 0 });
      // The other replica's command ended alone: it took what the first left.
      await until(async () => (await pidsWith(marker)).length === 0, 5_000);
    });

    it.skipIf(gap)(title('a command neither sees nor signals the processes of another'), async () => {
      // The other command is running (its sleep is on the host) before this one looks and kills: a
      // fixed 300 ms could pass before it started on a loaded machine, and the test then proved nothing.
      const marker = `3.${Math.floor(Math.random() * 1000)}`;
      const other = sb.exec(`sleep ${marker}; echo survived`);
      await until(async () => (await pidsWith(marker)).length === 1, 10_000);
      const r = await sb.exec('ls /proc | grep -c "^[0-9]"; kill -9 -1; echo after-kill');
      // its own PID 1 (the command's init), the shell, ls and grep: nothing of the other command
      expect(Number(r.stdout.split('\n')[0])).toBeLessThanOrEqual(4);
      expect((await other).stdout).toBe('survived\n');
    });

    it.skipIf(gap)(title('SysV IPC objects die with the command that made them'), async () => {
      const made = await sb.exec('ipcmk -M 4096 >/dev/null && ipcs -m | grep -c "^0x"');
      expect(made.stdout.trim()).toBe('1');
      expect((await sb.exec('ipcs -m | grep -c "^0x"')).stdout.trim()).toBe('0');
    });

    it.skipIf(!root && name === 'process')('a timed-out command dies whole, even one that cleared its parent-death signal and left its session', async () => {
      const marker = `${32_000 + Math.floor(Math.random() * 1000)}`;
      // PR_SET_PDEATHSIG is 1: both clear it; the child also leaves the session.
      const script = `import ctypes, os, time\nctypes.CDLL(None).prctl(1, 0)\nif os.fork() == 0:\n    os.setsid()\n    ctypes.CDLL(None).prctl(1, 0)\n    os.execvp("sleep", ["sleep", "${marker}"])\ntime.sleep(60)\n`;
      const r = await sb.exec(['python3', '-c', script], { timeoutMs: 1_000 });
      expect(r.timedOut).toBe(true);
      await until(async () => (await pidsWith(marker)).length === 0, 5_000);
      expect((await sb.exec('cat kept.txt')).stdout).toBe('kept');
    });
  });
}

describeIf(present.bwrap, 'the bwrap supervisor', 'bwrap sandbox driver not available')("the bwrap driver's holder and supervisor", () => {
  let tmp: Awaited<ReturnType<typeof tempRoot>>;
  let driver: SandboxDriver;
  let sb: Sandbox;

  beforeAll(async () => {
    tmp = await tempRoot();
    driver = await makeTestDriver('bwrap', { sandboxesRoot: tmp.root, instanceId: `holder-${process.pid}` });
    sb = await driver.create(spec('trace_holder', { files: { 'kept.txt': 'kept' } }));
  });
  afterAll(async () => {
    await sb?.destroy();
    await driver?.close?.();
    await tmp?.cleanup();
  });

  /** The sandbox's holder (cat, as the sandbox uid, child of its bwrap). */
  async function holder(): Promise<number> {
    const { uid } = await hostView(sb, tmp.root);
    const mine = new Set(uid !== null ? await liveProcessesOf(uid) : []);
    const cats = (await processesRunning(['/usr/bin/cat'])).filter((p) => mine.has(p.pid) || uid === null);
    expect(cats).toHaveLength(1);
    return cats[0]!.pid;
  }

  it('keeps them out of reach: PID 1 of a command is not signalable, traceable or readable, and hides the host', async () => {
    const r = await sb.exec(
      'kill -9 1 2>/dev/null; echo kill=$?; cat /proc/1/environ >/dev/null 2>&1; echo environ=$?; ls /proc/1/fd >/dev/null 2>&1; echo fd=$?; ' +
        'head -c 1 /proc/1/mem >/dev/null 2>&1; echo mem=$?; tr "\\0" " " </proc/1/cmdline',
    );
    expect(r.stdout).toMatch(/^kill=1\nenviron=1\nfd=[12]\nmem=1\nrft-supervisor $/);
  });

  /** A `sleep` of a minute and a bit, its argument unique on this machine: the command's mark on the host. */
  const aMinute = (): string => `60.${Math.floor(Math.random() * 1000)}`;

  // Each kill waits until the command runs (its sleep is on the host): after a fixed 200 ms, a
  // loaded machine could kill before the command started, and it then ran to 'never'.
  it('a holder killed from the host: the running command answers RFT_ERR_SANDBOX_INTERRUPTED, the next one runs with the workspace kept', async () => {
    const marker = aMinute();
    const running = sb.exec(`sleep ${marker}; echo never`);
    const pid = await holder();
    await until(async () => (await pidsWith(marker)).length === 1, 10_000);
    process.kill(pid, 'SIGKILL');
    await expect(running).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_INTERRUPTED', statusCode: 503 });
    const r = await sb.exec('cat kept.txt; echo " again"');
    expect(r.stdout).toBe('kept again\n');
    expect(await holder()).not.toBe(pid);
  });

  // A spawned process (a sandboxed MCP server) ended that way ends with the sandbox's error, which a
  // bridged call answers, not "the server was killed" shown to the model (it used to end as exit 127).
  it("a holder killed from the host: a spawned process ends with the sandbox's error, not an exit of its own", async () => {
    const marker = aMinute();
    const server = await sb.spawn(['sleep', marker]);
    const pid = await holder();
    await until(async () => (await pidsWith(marker)).length === 1, 10_000);
    process.kill(pid, 'SIGKILL');
    expect(await server.endedBySandbox!()).toMatchObject({ code: 'RFT_ERR_SANDBOX_INTERRUPTED', statusCode: 503 });
    const own = await sb.spawn(['sh', '-c', 'exit 3']);
    expect(await own.exited).toEqual({ exitCode: 3, signal: null });
    expect(await own.endedBySandbox!()).toBeUndefined();
  });

  it("a supervisor killed: a spawned process ends with the sandbox's error", async () => {
    const marker = aMinute();
    const server = await sb.spawn(['sleep', marker]);
    await until(async () => (await pidsWith(marker)).length === 1, 10_000);
    const sups = (await processesRunning(['rft-supervisor'])).filter((p) => p.ppid === process.pid);
    expect(sups).toHaveLength(1);
    process.kill(sups[0]!.pid, 'SIGKILL');
    expect(await server.endedBySandbox!()).toMatchObject({ code: 'RFT_ERR_SANDBOX_INTERRUPTED', statusCode: 503 });
    await until(async () => (await pidsWith(marker)).length === 0, 10_000);
  });

  it('a supervisor killed: running commands answer RFT_ERR_SANDBOX_INTERRUPTED, the next one runs with the workspace kept', async () => {
    const marker = aMinute();
    const running = sb.exec(`sleep ${marker}; echo never`);
    await until(async () => (await pidsWith(marker)).length === 1, 10_000);
    const sups = (await processesRunning(['rft-supervisor'])).filter((p) => p.ppid === process.pid);
    expect(sups).toHaveLength(1);
    process.kill(sups[0]!.pid, 'SIGKILL');
    await expect(running).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_INTERRUPTED', statusCode: 503 });
    expect((await sb.exec('cat kept.txt')).stdout).toBe('kept');
    await until(async () => (await pidsWith(marker)).length === 0, 10_000); // long before the sleep would end
  });
});
