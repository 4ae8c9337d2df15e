// Runs one host program for a sandbox exec: its own process group (killed whole on timeout or abort),
// capped output, stdin written then closed, and never the server's environment.
import { CappedOutput } from './output.js';
import { spawnChild } from './spawn.js';
import type { ExecResult } from './types.js';

export interface RunOptions {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  uid?: number;
  gid?: number;
  stdin?: string | Buffer;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  /** Extra data handed to the child as fds 3, 4, ... (bwrap's --ro-bind-data). */
  extraFds?: (string | Buffer)[];
  /** Called once the leader is gone and its group was killed, to reach what left the group (setsid). */
  onKill?: () => Promise<void>;
}

export function runProgram(opts: RunOptions): Promise<ExecResult> {
  const started = performance.now();
  return new Promise<ExecResult>((resolve) => {
    const child = spawnChild(opts);
    const stdout = new CappedOutput(child.stdout, opts.maxOutputBytes);
    const stderr = new CappedOutput(child.stderr, opts.maxOutputBytes);
    child.stdin?.on('error', () => {}); // EPIPE when the command does not read its stdin
    child.stdin?.end(opts.stdin ?? '');

    let timedOut = false;
    let killed = false;
    // Resolved once the sweep for escaped processes finished: the exec does not return before it, so
    // a late sweep can never hit the sandbox's next command.
    let swept: Promise<void> = Promise.resolve();
    const kill = (): void => {
      if (killed || child.pid === undefined) return;
      killed = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
      if (opts.onKill) swept = opts.onKill().catch(() => {});
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = (): void => kill();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) kill();

    let spawnError: Error | null = null;
    child.on('error', (e) => {
      spawnError = e;
    });
    child.on('exit', () => {
      clearTimeout(timer);
      // The leader exited: whatever it left running (`cmd &`, daemons) is not kept, as with bwrap,
      // whose PID namespace dies with it. Those could hold our pipes open, hence the forced close.
      if (!killed) kill();
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, 250).unref();
    });
    child.on('close', async (code, sig) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      await swept;
      resolve({
        exitCode: spawnError ? 127 : code,
        signal: sig,
        stdout: stdout.text(),
        stderr: spawnError ? `${stderr.text()}${(spawnError as Error).message}\n` : stderr.text(),
        stdoutTruncated: stdout.truncated,
        stderrTruncated: stderr.truncated,
        timedOut,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      });
    });
  });
}
