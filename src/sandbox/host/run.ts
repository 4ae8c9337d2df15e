// Runs one host program for a process-driver exec: its own process group (killed whole on timeout or
// abort), capped output, stdin written then closed, and never the server's environment. fd 3 is the
// optional result channel (the program writes, we read).
import type { Readable } from 'node:stream';
import { CappedOutput } from './output.js';
import { RESULT_FD, signalGroup, spawnChild, type StartOptions } from './spawn.js';
import type { ExecResult } from '../types.js';

export interface RunOptions extends StartOptions {
  stdin?: string | Buffer;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  /** Called once the leader is gone and its group was killed, to reach what left the group (setsid). */
  onKill?: () => Promise<void>;
}

/**
 * How long the pipes may stay open after the program exited. Only an escaped process can hold them
 * that long (the group kill ends everything else), i.e. the process driver
 * without root: a `setsid` daemon.
 */
const LINGER_MS = 250;

export function runProgram(opts: RunOptions): Promise<ExecResult> {
  const started = performance.now();
  return new Promise<ExecResult>((resolve) => {
    const child = spawnChild(opts);
    const stdout = new CappedOutput(child.stdout, opts.maxOutputBytes);
    const stderr = new CappedOutput(child.stderr, opts.maxOutputBytes);
    const channel = opts.resultChannel ? new CappedOutput(child.stdio[RESULT_FD] as Readable | null, opts.maxOutputBytes) : null;
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
      signalGroup(child.pid);
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
      // whose PID namespace dies with it. Something that escaped could hold our pipes open, hence
      // a forced close after LINGER_MS; but never before the loop polled the pipes once more. The
      // exit can be seen a whole turn before the output (libuv reaps every exited child on any
      // SIGCHLD, and reads a pipe only once epoll reported it), and when that turn ran long a bare
      // timer closed the pipes first: output lost under load (test/sandbox/exec.test.ts).
      if (!killed) kill();
      setTimeout(() => {
        setImmediate(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
          (child.stdio[RESULT_FD] as Readable | null | undefined)?.destroy();
        });
      }, LINGER_MS).unref();
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
        ...(channel ? { result: channel.text() } : {}),
        timedOut,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      });
    });
  });
}
