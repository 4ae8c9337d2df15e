// A host program (src/sandbox/host/spawn.ts: the process driver's spawn, MCP servers on the host) and its
// pid once it has exited: what it left in its group goes with it, and a later kill() never signals
// the pid again, since by then another process may have it (pid_max is 32768 on this machine, and a
// fork bomb in a sandbox goes through that in seconds).
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { startProgram } from '../../../src/sandbox/host/spawn.js';
import { describeIf } from '../../helpers/require.js';

const cwd = mkdtempSync(join(tmpdir(), 'rft-host-program-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));
const env = { PATH: '/usr/bin:/bin' };
/** Running or stopped, not gone or a zombie (an orphan's zombie waits for init to reap it). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Runs a shell script that prints one pid, and returns the program, once exited, and that pid. */
async function printedPid(script: string): Promise<{ p: ReturnType<typeof startProgram>; pid: number }> {
  const p = startProgram({ argv: ['/bin/sh', '-c', script], cwd, env });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await p.exited;
  await vi.waitFor(() => expect(out).toMatch(/^\d+\n$/), { timeout: 10_000 });
  return { p, pid: Number(out.trim()) };
}

it('kills what the program left in its group when it exits', async () => {
  const { pid: left } = await printedPid('sleep 30 & echo $!; exit 0');
  await vi.waitFor(() => expect(alive(left)).toBe(false), { timeout: 10_000 }); // the job sleeps 30 s
});

const LAST_PID = '/proc/sys/kernel/ns_last_pid';
let canPlacePids = false;
try {
  accessSync(LAST_PID, constants.W_OK);
  canPlacePids = true;
} catch {
  /* not root, or no pid namespace control */
}

/** Kills the placed process; its shell, waiting for it, then exits. */
async function stop(o: { sh: ReturnType<typeof spawn>; pid: number }): Promise<void> {
  const exited = o.sh.exitCode !== null ? Promise.resolve() : new Promise<void>((r) => o.sh.once('exit', () => r()));
  try {
    process.kill(o.pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
  await exited;
}

describeIf(canPlacePids, 'choosing the next pid', `${LAST_PID} is not writable (needs root)`)('a pid reused after the program exited', () => {
  it('is never signalled by a later kill()', async () => {
    const { p, pid } = await printedPid('echo $$');
    // Another process, a session and group leader of its own, given the exited program's pid. A shell
    // sets the next pid and forks at once (Node's spawn between the two would leave a window of
    // milliseconds for the machine's other processes to take it); tried until it lands.
    let other: { sh: ReturnType<typeof spawn>; pid: number } | undefined;
    for (let i = 0; i < 100 && other?.pid !== pid; i++) {
      if (other) await stop(other);
      const sh = spawn('/bin/sh', ['-c', `echo ${pid - 1} > ${LAST_PID}; setsid /bin/sleep 30 & echo $!; wait`], { stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      sh.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      await vi.waitFor(() => expect(out).toMatch(/^\d+\n$/), { timeout: 10_000 });
      other = { sh, pid: Number(out.trim()) };
    }
    try {
      expect(other?.pid, 'could not give the exited pid to another process').toBe(pid);
      await p.kill();
      await new Promise((r) => setTimeout(r, 200)); // a signal, if one had been sent, lands at once
      // sleep ignores no signal kill() sends: had it been signalled, it would be gone (its shell reaps it)
      expect(alive(pid)).toBe(true);
      expect(other!.sh.exitCode).toBeNull();
    } finally {
      if (other) await stop(other);
    }
  });
});
