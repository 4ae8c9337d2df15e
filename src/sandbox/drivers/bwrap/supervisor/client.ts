// The server's side of the supervisor (supervisor.c): one process per bwrap driver, spoken to in
// frames over its stdin and stdout. Requests are answered by id; a command's output arrives as it
// is written, then its exit. If the process dies, every pending request fails with
// RFT_ERR_SANDBOX_INTERRUPTED (503: nothing the model did), every sandbox it held is gone (their
// holders die with it), and the next request starts a new one (`epoch` counts the starts).
import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import type { Logger } from 'pino';
import { errors } from '../../../../errors.js';

/** A command's end as the supervisor reports it. */
export interface CommandExit {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  truncated: { stdout: boolean; stderr: boolean; result: boolean };
  /** Set when the command could not run for a reason of ours: "lost" (the sandbox is gone) or "setup ...". */
  failure: string | null;
}

export type Stream = 'stdout' | 'stderr' | 'result';

export interface CommandSpec {
  sandbox: number;
  uid: number;
  gid: number;
  /** Working directory inside the sandbox. */
  cwd: string;
  /** "cpu=N,data=N,..." (see limits.ts). */
  limits: string;
  argv: string[];
  env: Record<string, string>;
  stdin?: string | Buffer;
  resultChannel?: boolean;
  /** stdin stays open for write()/end() (a long-running process). */
  streamed?: boolean;
  /** Bytes kept per stream (the rest is cut: the writer gets EPIPE); 0 = all. */
  cap: number;
}

export interface Command {
  readonly id: number;
  onData(cb: (stream: Stream, data: Buffer) => void): void;
  write(data: Buffer): void;
  end(): void;
  /** SIGKILL to the command's process chain; its PID namespace, and all it started, die with it. */
  kill(): void;
  readonly exited: Promise<CommandExit>;
}

interface Pending {
  resolve(): void;
  reject(e: unknown): void;
}

interface Running {
  data: ((stream: Stream, data: Buffer) => void)[];
  settle(exit: CommandExit): void;
  fail(e: unknown): void;
}

export const STREAMS: Record<string, Stream> = { o: 'stdout', e: 'stderr', r: 'result' };
export const SIGNALS: Record<number, NodeJS.Signals> = { 9: 'SIGKILL', 15: 'SIGTERM', 6: 'SIGABRT', 11: 'SIGSEGV', 24: 'SIGXCPU', 25: 'SIGXFSZ' };

function field(b: Buffer | string): Buffer[] {
  const data = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  const len = Buffer.allocUnsafe(4);
  len.writeUInt32LE(data.length, 0);
  return [len, data];
}

export function frame(type: string, id: number, fields: (Buffer | string)[]): Buffer {
  const head = Buffer.allocUnsafe(9);
  const parts = fields.flatMap(field);
  const size = 5 + parts.reduce((n, p) => n + p.length, 0);
  head.writeUInt32LE(size, 0);
  head.write(type, 4, 'latin1');
  head.writeUInt32LE(id, 5);
  return Buffer.concat([head, ...parts]);
}

export const nulList = (xs: string[]): string => xs.map((x) => `${x}\0`).join('');

export function parseFields(b: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at + 4 <= b.length; ) {
    const n = b.readUInt32LE(at);
    out.push(b.subarray(at + 4, at + 4 + n));
    at += 4 + n;
  }
  return out;
}

/** A reply frame: its type, the id of the request it answers, its fields (and each as text). */
export interface Reply {
  type: string;
  id: number;
  fields: Buffer[];
  text(i: number): string;
}

/**
 * Frames off a byte stream (the supervisor's stdout, the Docker agent's): each whole frame is handed
 * to `onReply` as it completes, what is left of a frame is kept for the next chunk.
 */
export class FrameReader {
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;

  constructor(private readonly onReply: (r: Reply) => void) {}

  push(chunk: Buffer): void {
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    let buf = this.buffered.length === 1 ? chunk : Buffer.concat(this.buffered, this.bufferedBytes);
    let at = 0;
    while (buf.length - at >= 4) {
      const size = buf.readUInt32LE(at);
      if (buf.length - at - 4 < size) break;
      const f = buf.subarray(at + 4, at + 4 + size);
      const fields = parseFields(f.subarray(5));
      this.onReply({ type: String.fromCharCode(f[0] ?? 0), id: f.readUInt32LE(1), fields, text: (i) => fields[i]?.toString('utf8') ?? '' });
      at += 4 + size;
    }
    buf = buf.subarray(at);
    this.buffered = buf.length ? [Buffer.from(buf)] : [];
    this.bufferedBytes = buf.length;
  }

  /** Drops a partial frame (the stream it came from is gone). */
  clear(): void {
    this.buffered = [];
    this.bufferedBytes = 0;
  }
}

/** A command's end as its 'x' reply says it. */
export function commandExit(r: Reply): CommandExit {
  const truncated = r.text(2);
  const sig = r.text(1);
  return {
    exitCode: r.text(0) === '' ? null : Number(r.text(0)),
    signal: sig === '' ? null : (SIGNALS[Number(sig)] ?? 'SIGKILL'),
    truncated: { stdout: truncated.includes('o'), stderr: truncated.includes('e'), result: truncated.includes('r') },
    failure: r.text(3) || null,
  };
}

/** A command's end to come: `exited` (observed here, the caller's to await), how to settle or fail it, whether it has. */
export function commandEnd(): { exited: Promise<CommandExit>; settle(exit: CommandExit): void; fail(e: unknown): void; done(): boolean } {
  let settle!: (exit: CommandExit) => void;
  let fail!: (e: unknown) => void;
  const exited = new Promise<CommandExit>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  exited.catch(() => {}); // observed by the caller
  let done = false;
  const finish = (): void => void (done = true);
  exited.then(finish, finish);
  return { exited, settle, fail, done: () => done };
}

/** The Command for a started 'X': stdin ('I', 'J') and kill ('S') frames through `send`, which drops them once the command ended. */
export function commandHandle(id: number, exited: Promise<CommandExit>, listeners: ((stream: Stream, data: Buffer) => void)[], send: (type: string, fields: Buffer[]) => void): Command {
  return {
    id,
    exited,
    onData: (cb) => listeners.push(cb),
    write: (data) => {
      if (data.length > 0) send('I', [data]);
    },
    end: () => send('J', []),
    kill: () => send('S', []),
  };
}

/** A streamed command's stdio as Node streams (spawn()): its output by stream, its stdin written through and ended. */
export function commandStdio(cmd: Command): { stdin: Writable; stdout: PassThrough; stderr: PassThrough } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  cmd.onData((stream, data) => (stream === 'stderr' ? stderr : stdout).write(data));
  const stdin = new Writable({
    write: (chunk: Buffer, _enc, cb) => {
      cmd.write(chunk);
      cb();
    },
    final: (cb) => {
      cmd.end();
      cb();
    },
  });
  return { stdin, stdout, stderr };
}

export class Supervisor {
  private child: ChildProcess | null = null;
  private starting: Promise<ChildProcess> | null = null;
  private readonly pending = new Map<number, Pending>();
  private readonly running = new Map<number, Running>();
  private readonly goneListeners = new Set<(sandbox: number) => void>();
  private nextId = 1;
  private readonly reader = new FrameReader((r) => this.dispatch(r));
  private closed = false;
  /** How many times a supervisor process was started: sandboxes of an earlier epoch are gone. */
  epoch = 0;

  constructor(
    private readonly binary: string,
    private readonly filter: Buffer,
    private readonly log?: Logger,
    /** How long an exited command's pipes may stay open for what escaped it (default 250 ms; tests: 0). */
    private readonly lingerMs?: number,
  ) {}

  /**
   * Told the id of a sandbox whose holder died (not by destroy): its processes are gone. Returns
   * the unsubscribe, which a sandbox's runner calls when it closes (else each one stays here for good).
   */
  onSandboxGone(cb: (sandbox: number) => void): () => void {
    this.goneListeners.add(cb);
    return () => this.goneListeners.delete(cb);
  }

  /** Starts the process now (else on the first request) and checks it answers. */
  async ready(): Promise<void> {
    await this.process();
  }

  /** `tmpfs`: the sandbox's own tmpfs on the host, which bubblewrap's namespace gets alone (see supervisor.c). */
  createSandbox(sandbox: number, o: { uid: number; gid: number; tmpfs?: string; argv: string[]; fds: (string | Buffer)[] }): Promise<void> {
    return this.request('C', [String(sandbox), String(o.uid), String(o.gid), o.tmpfs ?? '', nulList(o.argv), ...o.fds]);
  }

  /** Resolves once every process of the sandbox is gone. */
  destroySandbox(sandbox: number): Promise<void> {
    return this.request('D', [String(sandbox)]);
  }

  mountTmpfs(target: string, options: string): Promise<void> {
    return this.request('M', [target, options]);
  }

  unmount(target: string): Promise<void> {
    return this.request('U', [target]);
  }

  /** Kills every process of `uid` (a sandbox uid) at once. */
  killUid(uid: number): Promise<void> {
    return this.request('K', [String(uid)]);
  }

  /** Starts a command; fails only through `exited` (never throws). */
  run(spec: CommandSpec): Command {
    const id = this.id();
    const listeners: ((stream: Stream, data: Buffer) => void)[] = [];
    const { exited, settle, fail, done } = commandEnd();
    this.running.set(id, { data: listeners, settle, fail });
    const flags = `${spec.resultChannel ? 'r' : ''}${spec.streamed ? 's' : ''}`;
    const env = Object.entries(spec.env).map(([k, v]) => `${k}=${v}`);
    this.send(
      frame('X', id, [String(spec.sandbox), String(spec.uid), String(spec.gid), spec.cwd, spec.limits, nulList(spec.argv), nulList(env), spec.stdin ?? '', flags, String(spec.cap)]),
    ).catch((e: unknown) => this.finish(id, null, e));
    return commandHandle(id, exited, listeners, (type, fields) => {
      if (!done()) void this.send(frame(type, id, fields)).catch(() => {});
    });
  }

  /** Stops the process (and with it every sandbox and command it held). */
  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (!child) return;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    child.stdin?.end(); // on EOF it kills what it started and exits
    const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await gone;
    clearTimeout(t);
  }

  private id(): number {
    const id = this.nextId;
    this.nextId = this.nextId >= 0xfffffff0 ? 1 : this.nextId + 1;
    return id;
  }

  private async request(type: string, fields: (Buffer | string)[]): Promise<void> {
    const id = this.id();
    const done = new Promise<void>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    try {
      await this.send(frame(type, id, fields));
    } catch (e) {
      this.pending.delete(id);
      throw e;
    }
    return done;
  }

  private async send(data: Buffer): Promise<void> {
    const child = await this.process();
    child.stdin?.write(data);
  }

  private process(): Promise<ChildProcess> {
    if (this.closed) return Promise.reject(errors.sandboxClosed());
    if (this.child) return Promise.resolve(this.child);
    this.starting ??= this.start().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async start(): Promise<ChildProcess> {
    // argv0 without its directory: every command's PID 1 is a fork of this process, and its command
    // line is readable inside (no host path there).
    const child = spawn(this.binary, this.lingerMs !== undefined ? [String(this.lingerMs)] : [], { argv0: 'rft-supervisor', stdio: ['pipe', 'pipe', 'pipe'], env: {}, cwd: '/' });
    const started = new Promise<void>((resolve, reject) => {
      this.pending.set(0, { resolve, reject }); // its first frame: 'R' 0 "ready"
      child.once('error', (e) => reject(errors.sandboxFailed(`the sandbox supervisor did not start: ${e.message}`)));
    });
    child.stdout?.on('data', (chunk: Buffer) => this.reader.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => this.log?.warn({ stderr: chunk.toString('utf8').slice(0, 2000) }, 'sandbox supervisor'));
    child.stdin?.on('error', () => {});
    child.once('exit', (code, signal) => this.exited(child, code, signal));
    await started;
    // The filter every command runs under, before anything else on the channel.
    await new Promise<void>((resolve, reject) => {
      const id = this.id();
      this.pending.set(id, { resolve, reject });
      child.stdin?.write(frame('F', id, [this.filter]));
    });
    this.child = child;
    this.epoch++;
    return child;
  }

  private exited(child: ChildProcess, code: number | null, signal: string | null): void {
    if (!this.closed) this.log?.error({ code, signal }, 'the sandbox supervisor exited; its sandboxes are rebuilt on their next command');
    if (this.child === child) this.child = null;
    const e = errors.sandboxInterrupted();
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
    for (const [id] of this.running) this.finish(id, null, e);
    this.reader.clear();
  }

  private finish(id: number, exit: CommandExit | null, e?: unknown): void {
    const r = this.running.get(id);
    if (!r) return;
    this.running.delete(id);
    if (exit) r.settle(exit);
    else r.fail(e);
  }

  private dispatch(r: Reply): void {
    const { type, id, fields, text } = r;
    if (type === 'R') {
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      const err = Number(text(0));
      if (err === 0) p.resolve();
      else p.reject(errors.sandboxFailed(`sandbox supervisor: ${text(1) || `error ${err}`}`));
    } else if (type in STREAMS) {
      const run = this.running.get(id);
      const data = fields[0];
      if (run && data) for (const cb of run.data) cb(STREAMS[type] as Stream, data);
    } else if (type === 'x') {
      this.finish(id, commandExit(r));
    } else if (type === 'g') {
      for (const cb of this.goneListeners) cb(id);
    }
  }
}
