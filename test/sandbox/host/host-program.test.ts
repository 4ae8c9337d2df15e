// A host program (src/sandbox/host/spawn.ts: the process driver's spawn, MCP servers on the host) and its
// pid once it has exited: what it left in its group goes with it, and a later kill() never signals
// the pid again, since by then another process may have it (pid_max is 32768 on this machine, and a
// fork bomb in a sandbox goes through that in seconds).
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

describeIf(canPlacePids, 'choosing the next pid', `${LAST_PID} is not writable (needs root)`)('a pid reused after the program exited', () => {
  it('is never signalled by a later kill()', async () => {
    const { p, pid } = await printedPid('echo $$');
    // Another process, a group leader of its own, given the exited program's pid (others on the
    // machine may take it first: tried a few times).
    let other: ReturnType<typeof spawn> | undefined;
    for (let i = 0; i < 20 && other?.pid !== pid; i++) {
      other?.kill('SIGKILL');
      writeFileSync(LAST_PID, String(pid - 1));
      other = spawn('/bin/sleep', ['30'], { detached: true, stdio: 'ignore' });
    }
    try {
      expect(other?.pid, 'could not give the exited pid to another process').toBe(pid);
      await p.kill();
      await new Promise((r) => setTimeout(r, 200)); // a signal, if one had been sent, lands at once
      expect(other!.exitCode).toBeNull();
      expect(other!.signalCode).toBeNull();
      expect(alive(pid)).toBe(true);
    } finally {
      other?.kill('SIGKILL');
    }
  });
});
