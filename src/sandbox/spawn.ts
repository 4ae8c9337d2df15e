// Starts one long-running host program for Sandbox.spawn (bwrap and process drivers): its own process
// group, never the server's environment, streaming stdio. kill() takes the group and every
// descendant (a bwrap PID namespace dies with its outer process).
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { killTree } from './proc-tree.js';
import type { SandboxProcess } from './types.js';

export interface StartOptions {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  uid?: number;
  gid?: number;
  /** Extra data handed to the child as fds 3, 4, ... (bwrap's --ro-bind-data). */
  extraFds?: (string | Buffer)[];
}

/** A host program in a process group of its own, its extra fds written and closed. */
export function spawnChild(opts: StartOptions): ChildProcess {
  const extra = opts.extraFds ?? [];
  const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', ...extra.map(() => 'pipe' as const)];
  const [cmd, ...args] = opts.argv;
  const child = spawn(cmd ?? '/bin/false', args, {
    cwd: opts.cwd,
    env: opts.env,
    stdio,
    detached: true, // a process group of its own, so one kill reaches what it started
    ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
    ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
  });
  extra.forEach((data, i) => {
    const w = child.stdio[3 + i] as Writable;
    w.on('error', () => {});
    w.end(data);
  });
  return child;
}

export function startProgram(opts: StartOptions): SandboxProcess {
  const child = spawnChild(opts);
  const stdin = child.stdin as Writable;
  const stdout = child.stdout as Readable;
  const stderr = child.stderr as Readable;
  stdin.on('error', () => {}); // EPIPE once the program is gone
  const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) => {
    child.on('error', () => resolve({ exitCode: 127, signal: null }));
    child.on('exit', (code, sig) => resolve({ exitCode: code, signal: sig }));
  });
  let killing: Promise<void> | null = null;
  const kill = (): Promise<void> => {
    killing ??= (async () => {
      const pid = child.pid;
      if (pid === undefined) return;
      await killTree(pid); // nothing to do when the leader is gone; its group may still hold jobs
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* the group is gone */
      }
      await exited;
    })();
    return killing;
  };
  return { stdin, stdout, stderr, exited, kill };
}
