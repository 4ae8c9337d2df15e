// Runs execs in a container: create one, then start it on a hijacked connection (HTTP upgrade to a
// raw stream) so stdin can be written and half-closed and stdout/stderr read as Docker's multiplexed
// frames (8-byte header: stream id, 3 zero bytes, big-endian length). undici has no upgrade with a
// request body, so the hijack writes the request on a raw connection to the engine (unix socket, TCP
// or TLS: DockerApi.connect). Nothing here touches the engine's host: processes are found and killed
// from inside the container (the engine may be another machine).
import type { Socket } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { errors } from '../../../errors.js';
import { DOCKER_API, DockerStatusError, type DockerApi } from './api.js';
import type { EngineEvents } from './events.js';
import type { SandboxProcess } from '../../types.js';

export interface DockerProcessRequest {
  container: string;
  argv: string[];
  env: string[];
  workingDir: string;
  user: string;
}

export interface DockerExecRequest extends DockerProcessRequest {
  stdin: string | Buffer;
  maxOutputBytes: number;
}

export interface DockerExecOutcome {
  exitCode: number | null;
  stdout: Buffer;
  stderr: Buffer;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

/** How long the stream may stay open once the command exited and its leftovers were killed. */
const LINGER_MS = 500;

/** Splits Docker's multiplexed stream into (stream id, payload) frames. */
export class Frames {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onFrame: (stream: 1 | 2, data: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.length >= 8) {
      const len = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + len) return;
      this.onFrame(this.pending[0] === 2 ? 2 : 1, this.pending.subarray(8, 8 + len));
      this.pending = this.pending.subarray(8 + len);
    }
  }
}

/**
 * The wrappers (sandbox.ts) print `rft-pid <pid>` on stderr before anything else runs: the
 * pid, inside the container, of the process whose tree a kill must take. Taken off the stream here.
 */
export class PidPreamble {
  pid: number | null = null;
  private head: Buffer | null = Buffer.alloc(0);
  private waiters: ((pid: number | null) => void)[] = [];

  /** The pid once the line is read (null if the stream ends without one). */
  wait(): Promise<number | null> {
    if (this.head === null) return Promise.resolve(this.pid);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** No line will come (the stream ended). */
  end(): void {
    if (this.head === null) return;
    this.head = null;
    this.settle();
  }

  private settle(): void {
    for (const w of this.waiters.splice(0)) w(this.pid);
  }

  /** The stderr bytes past the preamble (nothing while its line is incomplete). */
  take(data: Buffer): Buffer {
    if (this.head === null) return data;
    const buf = this.head.length ? Buffer.concat([this.head, data]) : data;
    const nl = buf.indexOf(10);
    if (nl < 0 && buf.length < 32) {
      this.head = buf;
      return Buffer.alloc(0);
    }
    this.head = null;
    const m = nl < 0 ? null : /^rft-pid (\d+)$/.exec(buf.subarray(0, nl).toString('latin1'));
    if (m) this.pid = Number(m[1]);
    this.settle();
    return m ? buf.subarray(nl + 1) : buf;
  }
}

/** Keeps each output stream up to its cap; past it, the command is stopped (like `| head -c N`). */
class Capture {
  readonly out: Buffer[][] = [[], [], []];
  readonly size = [0, 0, 0];
  readonly truncated = [false, false, false];

  constructor(
    private readonly cap: number,
    private readonly onFlood: () => void,
  ) {}

  keep(stream: 1 | 2, data: Buffer): void {
    if (data.length === 0) return;
    const room = this.cap - (this.size[stream] ?? 0);
    if (data.length <= room) {
      this.out[stream]?.push(data);
      this.size[stream] = (this.size[stream] ?? 0) + data.length;
      return;
    }
    if (room > 0) this.out[stream]?.push(data.subarray(0, room));
    this.size[stream] = this.cap;
    if (!this.truncated[stream]) {
      this.truncated[stream] = true;
      this.onFlood();
    }
  }
}

async function hijack(api: DockerApi, path: string, body: string): Promise<{ sock: Socket; rest: Buffer }> {
  const sock = await api.connect();
  return new Promise((resolve, reject) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      sock.off('data', onData);
      sock.off('error', onError);
      const status = Number(head.subarray(0, end).toString('latin1').split(' ')[1]);
      if (status !== 101 && status !== 200) {
        sock.destroy();
        reject(new DockerStatusError(status, path, `docker exec start: ${status} ${head.subarray(end + 4).toString('utf8').slice(0, 300)}`));
        return;
      }
      resolve({ sock, rest: head.subarray(end + 4) });
    };
    const onError = (e: Error): void => reject(errors.sandboxFailed(`docker exec start: ${e.message}`));
    sock.on('data', onData);
    sock.once('error', onError);
    sock.write(
      `POST /${DOCKER_API}${path} HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\n` +
        `Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
}

/** Creates an exec with stdin, stdout and stderr attached (not started). */
export async function createExec(api: DockerApi, req: DockerProcessRequest): Promise<string> {
  const created = await api.call<{ Id: string }>('POST', `/containers/${req.container}/exec`, {
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    Cmd: req.argv,
    Env: req.env,
    WorkingDir: req.workingDir,
    User: req.user,
  });
  return created.body.Id;
}

export function startExec(api: DockerApi, execId: string): Promise<{ sock: Socket; rest: Buffer }> {
  return hijack(api, `/exec/${execId}/start`, JSON.stringify({ Detach: false, Tty: false }));
}

/**
 * Polls the exec until its process exits while the stream is still open, then calls `onExit`. Rare:
 * the in-container wrapper (sandbox.ts) kills what a command leaves behind, so a stream held
 * open past the command needs a concurrent exec; hence the late first poll.
 */
async function watchExit(api: DockerApi, execId: string, ended: () => boolean, onExit: () => Promise<void>): Promise<void> {
  for (let delay = 250; !ended(); delay = Math.min(delay * 2, 1_000)) {
    await new Promise((r) => setTimeout(r, delay));
    if (ended()) return;
    const info = await api.call<{ Running: boolean }>('GET', `/exec/${execId}/json`).catch(() => null);
    if (info && !info.body.Running) {
      if (!ended()) await onExit();
      return;
    }
  }
}

export interface DockerExecHooks {
  /** An output stream passed its cap: the caller kills the exec's processes. */
  stop(): void;
  /** The command exited while the streams stay open: the caller kills what it left. */
  onExit?(): Promise<void>;
  /** Aborted when the caller gives up on the engine (it stopped answering): the stream is dropped. */
  abandon?: AbortSignal;
  /** Reads the wrapper's pid line off stderr (see PidPreamble). */
  preamble?: PidPreamble;
}

export async function dockerExec(api: DockerApi, req: DockerExecRequest, hooks: DockerExecHooks): Promise<DockerExecOutcome> {
  const execId = await createExec(api, req);
  const capture = new Capture(req.maxOutputBytes, hooks.stop);
  const pre = hooks.preamble;
  const frames = new Frames((stream, data) => capture.keep(stream, stream === 2 && pre ? pre.take(data) : data));
  const { sock, rest } = await startExec(api, execId);
  let ended = false;
  const drop = (): void => void sock.destroy();
  hooks.abandon?.addEventListener('abort', drop, { once: true });
  try {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        ended = true;
        resolve();
      };
      sock.on('data', (c: Buffer) => frames.push(c));
      sock.on('end', done);
      sock.on('close', done);
      sock.on('error', done);
      if (rest.length) frames.push(rest);
      sock.end(req.stdin); // half-close: the command sees EOF on stdin
      void watchExit(api, execId, () => ended, async () => {
        // The command exited but something it started holds the streams open (Docker would wait 2 s):
        // let the caller kill the leftovers (the stream then ends by itself), and stop reading after
        // a while if it does not; but only once the loop has read the socket again, so output that
        // already arrived is never dropped (see run.ts).
        await hooks.onExit?.();
        setTimeout(() => setImmediate(() => sock.destroy()), LINGER_MS).unref();
      });
    });
  } finally {
    hooks.abandon?.removeEventListener('abort', drop);
    sock.destroy();
    pre?.end();
  }
  if (hooks.abandon?.aborted) throw hooks.abandon.reason;
  const info = await api.call<{ ExitCode: number | null; Running: boolean }>('GET', `/exec/${execId}/json`);
  return {
    exitCode: info.body.Running ? null : info.body.ExitCode,
    stdout: Buffer.concat(capture.out[1] ?? []),
    stderr: Buffer.concat(capture.out[2] ?? []),
    stdoutTruncated: capture.truncated[1] ?? false,
    stderrTruncated: capture.truncated[2] ?? false,
  };
}

/**
 * Starts a long-running exec with streaming stdio (Sandbox.spawn). Frames are demultiplexed into
 * stdout and stderr with backpressure (the socket pauses while a reader is behind); ending stdin
 * half-closes the connection. The exec's death comes from the engine's event stream, since the
 * connection stays open while stdin is. `kill` takes the process tree (the caller knows how: inside
 * the container, from the pid the wrapper printed, `preamble`).
 */
export async function dockerSpawn(
  api: DockerApi,
  events: EngineEvents,
  req: DockerProcessRequest,
  kill: (preamble: PidPreamble) => Promise<void>,
  /** Gets the process's preamble as soon as its stream is read (its pid, once the line came). */
  onPreamble?: (preamble: PidPreamble) => void,
): Promise<SandboxProcess> {
  const execId = await createExec(api, req);
  const { died } = await events.watch(execId);
  let started: { sock: Socket; rest: Buffer };
  try {
    started = await startExec(api, execId);
  } catch (e) {
    events.forget(execId);
    throw e;
  }
  const { sock, rest } = started;
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const pre = new PidPreamble();
  onPreamble?.(pre);
  const frames = new Frames((stream, data) => {
    const out = stream === 2 ? stderr : stdout;
    const bytes = stream === 2 ? pre.take(data) : data;
    if (bytes.length && !out.write(bytes)) {
      sock.pause();
      out.once('drain', () => sock.resume());
    }
  });
  sock.on('data', (c: Buffer) => frames.push(c));
  sock.on('error', () => sock.destroy());
  if (rest.length) frames.push(rest);
  const closed = new Promise<void>((resolve) => sock.once('close', () => resolve()));
  // The process is gone: close our side, so the engine finishes copying its output and hangs up
  // (it keeps the connection while stdin is open); cut it if it does not.
  void died.then(() => {
    if (!sock.destroyed) sock.end();
    setTimeout(() => sock.destroy(), 2_000).unref();
  });
  const exited = closed.then(async () => {
    stdout.end();
    stderr.end();
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([died, new Promise<null>((r) => (timer = setTimeout(() => r(null), 2_000)))]);
    clearTimeout(timer);
    events.forget(execId);
    return { exitCode: code === 137 ? null : code, signal: code === 137 ? 'SIGKILL' : null };
  });
  const stdin = new Writable({
    write: (chunk: Buffer, _enc, cb) => (sock.destroyed ? cb() : sock.write(chunk, () => cb())),
    final: (cb) => {
      if (!sock.destroyed) sock.end();
      cb();
    },
  });
  stdin.on('error', () => {});
  let killing: Promise<void> | null = null;
  return {
    stdin,
    stdout,
    stderr,
    exited,
    kill: () => {
      killing ??= (async () => {
        await kill(pre).catch(() => {});
        const gone = await Promise.race([exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 2_000).unref())]);
        if (!gone) sock.destroy();
        await exited;
      })();
      return killing;
    },
  };
}

