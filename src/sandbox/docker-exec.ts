// Runs one exec in a container: create it, then start it on a hijacked connection (HTTP upgrade to a
// raw stream) so stdin can be written and half-closed and stdout/stderr read as Docker's multiplexed
// frames (8-byte header: stream id, 3 zero bytes, big-endian length). undici has no upgrade with a
// request body, so the hijack uses node:net on the same unix socket.
import { connect, type Socket } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { errors } from '../errors.js';
import { DOCKER_API, type DockerApi } from './docker-api.js';
import type { ExecDeaths } from './docker-events.js';
import { killTree } from './proc-tree.js';
import type { SandboxProcess } from './types.js';

export interface DockerProcessRequest {
  container: string;
  argv: string[];
  env: string[];
  workingDir: string;
  user: string;
}

export interface DockerExecRequest extends DockerProcessRequest {
  /** Told the exec's id once it exists (to kill its process tree by host pid). */
  onCreated?: (execId: string) => void;
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

class Demux {
  private pending: Buffer = Buffer.alloc(0);
  readonly out: Buffer[][] = [[], [], []];
  readonly size = [0, 0, 0];
  readonly truncated = [false, false, false];

  constructor(
    private readonly cap: number,
    private readonly onFlood: () => void,
  ) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.length >= 8) {
      const stream = this.pending[0] ?? 1;
      const len = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + len) return;
      this.keep(stream === 2 ? 2 : 1, this.pending.subarray(8, 8 + len));
      this.pending = this.pending.subarray(8 + len);
    }
  }

  private keep(stream: 1 | 2, data: Buffer): void {
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
      this.onFlood(); // like `| head -c N`: the writer is stopped instead of drained
    }
  }
}

function hijack(socketPath: string, path: string, body: string): Promise<{ sock: Socket; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const sock = connect({ path: socketPath, allowHalfOpen: true });
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      sock.off('data', onData);
      const status = Number(head.subarray(0, end).toString('latin1').split(' ')[1]);
      if (status !== 101 && status !== 200) {
        sock.destroy();
        reject(errors.sandboxFailed(`docker exec start: ${status} ${head.subarray(end + 4).toString('utf8').slice(0, 300)}`));
        return;
      }
      resolve({ sock, rest: head.subarray(end + 4) });
    };
    sock.on('data', onData);
    sock.once('error', (e) => reject(errors.sandboxFailed(`docker exec start: ${e.message}`)));
    sock.write(
      `POST /${DOCKER_API}${path} HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\n` +
        `Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
}

/** Creates an exec with stdin, stdout and stderr attached (not started). */
async function createExec(api: DockerApi, req: DockerProcessRequest): Promise<string> {
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

function startExec(api: DockerApi, execId: string): Promise<{ sock: Socket; rest: Buffer }> {
  return hijack(api.socketPath, `/exec/${execId}/start`, JSON.stringify({ Detach: false, Tty: false }));
}

/** Polls the exec until its process exits while the stream is still open, then calls `onExit`. */
async function watchExit(api: DockerApi, execId: string, ended: () => boolean, onExit: () => Promise<void>): Promise<void> {
  for (let delay = 50; !ended(); delay = Math.min(delay * 2, 500)) {
    await new Promise((r) => setTimeout(r, delay));
    if (ended()) return;
    const info = await api.call<{ Running: boolean }>('GET', `/exec/${execId}/json`).catch(() => null);
    if (info && !info.body.Running) {
      if (!ended()) await onExit();
      return;
    }
  }
}

/**
 * `stop` is called when an output stream passes its cap (the caller kills the exec's processes);
 * `onExit` when the command exited while the streams stay open (the caller kills what it left).
 */
export async function dockerExec(api: DockerApi, req: DockerExecRequest, stop: () => void, onExit: () => Promise<void> = async () => {}): Promise<DockerExecOutcome> {
  const execId = await createExec(api, req);
  req.onCreated?.(execId);
  const demux = new Demux(req.maxOutputBytes, stop);
  const { sock, rest } = await startExec(api, execId);
  let ended = false;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      ended = true;
      resolve();
    };
    sock.on('data', (c: Buffer) => demux.push(c));
    sock.on('end', done);
    sock.on('close', done);
    sock.on('error', done);
    if (rest.length) demux.push(rest);
    sock.end(req.stdin); // half-close: the command sees EOF on stdin
    void watchExit(api, execId, () => ended, async () => {
      // The command exited but something it started holds the streams open (Docker would wait 2 s):
      // let the caller kill the leftovers, then stop reading.
      await onExit();
      setTimeout(() => sock.destroy(), 100).unref();
    });
  });
  sock.destroy();
  const info = await api.call<{ ExitCode: number | null; Running: boolean }>('GET', `/exec/${execId}/json`);
  return {
    exitCode: info.body.Running ? null : info.body.ExitCode,
    stdout: Buffer.concat(demux.out[1] ?? []),
    stderr: Buffer.concat(demux.out[2] ?? []),
    stdoutTruncated: demux.truncated[1] ?? false,
    stderrTruncated: demux.truncated[2] ?? false,
  };
}

/**
 * Kills a running exec's process tree by its host pid; false when it had already exited. An exec
 * that is still starting has no pid yet (the engine reports 0): wait for it, a little.
 */
export async function killExecTree(api: DockerApi, execId: string): Promise<boolean> {
  for (let attempt = 0; attempt < 40; attempt++) {
    const info = await api.call<{ Running: boolean; Pid: number; ExitCode: number | null }>('GET', `/exec/${execId}/json`).catch(() => null);
    if (!info || info.body.ExitCode !== null) return false;
    // The host pid is only meaningful while the exec runs (afterwards it may belong to anyone).
    if (info.body.Running && info.body.Pid > 0) {
      await killTree(info.body.Pid);
      return true;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
}

/**
 * Starts a long-running exec with streaming stdio (Sandbox.spawn). Frames are demultiplexed into
 * stdout and stderr with backpressure (the socket pauses while a reader is behind); ending stdin
 * half-closes the connection. The exec's death comes from the engine's events (`deaths`), since the
 * connection stays open while stdin is; kill() kills the exec's process tree by its host pid.
 */
export async function dockerSpawn(api: DockerApi, deaths: ExecDeaths, req: DockerProcessRequest): Promise<SandboxProcess> {
  const execId = await createExec(api, req);
  const { died } = await deaths.watch(execId);
  let started: { sock: Socket; rest: Buffer };
  try {
    started = await startExec(api, execId);
  } catch (e) {
    deaths.forget(execId);
    throw e;
  }
  const { sock, rest } = started;
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let pending: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 8) {
      const len = pending.readUInt32BE(4);
      if (pending.length < 8 + len) return;
      const out = pending[0] === 2 ? stderr : stdout;
      if (!out.write(pending.subarray(8, 8 + len))) {
        sock.pause();
        out.once('drain', () => sock.resume());
      }
      pending = pending.subarray(8 + len);
    }
  };
  sock.on('data', onData);
  sock.on('error', () => sock.destroy());
  if (rest.length) onData(rest);
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
    deaths.forget(execId);
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
  const kill = (): Promise<void> => {
    killing ??= (async () => {
      if (!(await killExecTree(api, execId))) sock.destroy();
      await exited;
    })();
    return killing;
  };
  return { stdin, stdout, stderr, exited, kill };
}
