// Starts one long-running host program (the process driver's Sandbox.spawn, MCP servers on the
// host): its own process group, never the server's environment, streaming stdio. kill() takes the
// group and every descendant.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { killTree } from './proc-tree.js';
import type { SandboxProcess } from '../types.js';

export interface StartOptions {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  uid?: number;
  gid?: number;
  /** Open fd 3 as a channel the child writes to (child.stdio[RESULT_FD]); otherwise fd 3 is closed. */
  resultChannel?: boolean;
}

/** fd of the result channel in the child. */
export const RESULT_FD = 3;

/** A host program in a process group of its own. */
export function spawnChild(opts: StartOptions): ChildProcess {
  const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', opts.resultChannel ? 'pipe' : 'ignore'];
  const [cmd, ...args] = opts.argv;
  const child = spawn(cmd ?? '/bin/false', args, {
    cwd: opts.cwd,
    env: opts.env,
    stdio,
    detached: true, // a process group of its own, so one kill reaches what it started
    ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
    ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
  });
  return child;
}

/** `pid`: the program's, which leads its process group (undefined when it could not start). */
export function startProgram(opts: StartOptions): SandboxProcess & { pid: number | undefined } {
  const child = spawnChild(opts);
  const stdin = child.stdin as Writable;
  const stdout = child.stdout as Readable;
  const stderr = child.stderr as Readable;
  stdin.on('error', () => {}); // EPIPE once the program is gone
  const pid = child.pid;
  const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) => {
    child.on('error', () => resolve({ exitCode: 127, signal: null }));
    child.on('exit', (code, sig) => {
      // The leader is gone: what it left in its group goes now, while the group's id still names
      // only them (an id is not reused while a group has members). Later, once the group is empty,
      // the pid can be reused by any process (pid_max is often 32768, and a fork bomb in a sandbox
      // goes through it in seconds), so nothing is ever sent to it after this.
      if (pid !== undefined) signalGroup(pid);
      resolve({ exitCode: code, signal: sig });
    });
  });
  let killing: Promise<void> | null = null;
  const kill = (): Promise<void> => {
    killing ??= (async () => {
      // Not started, or exited and swept: its pid is no longer ours to signal.
      if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      await killTree(pid); // until it is reaped, the pid is the program's (a zombie still holds it)
      signalGroup(pid);
      await exited;
    })();
    return killing;
  };
  return { stdin, stdout, stderr, exited, kill, pid };
}

/** SIGKILLs a process group; nothing when it is gone. Only while the group's id is still ours (see kill above). */
export function signalGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    /* the group is gone */
  }
}
