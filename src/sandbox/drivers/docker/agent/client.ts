// The server's side of one container's agent (agent.c): started by one engine exec, attached for the
// container's life, then every command goes over that one hijacked stream in the bwrap supervisor's
// frames (../../bwrap/supervisor/client.ts). The engine never sees a command again.
//
// Starting: the exec runs perl (in every Debian image: perl-base is essential) as the sandbox uid,
// which reads the agent's executable off stdin into a memfd and execs it: nothing is written to the
// container's file system (its root is read-only, /tmp is noexec, and the workspace belongs to the
// rollout, which could replace a file there), and it works the same on a remote engine. The agent
// then answers 'R' "ready" <pid>. An image without perl, or an engine that refuses, leaves the
// sandbox on the exec path (sandbox.ts).
import type { Socket } from 'node:net';
import { errors } from '../../../../errors.js';
import { commandEnd, commandExit, commandHandle, frame, FrameReader, nulList, STREAMS, type Command, type CommandExit, type Reply, type Stream } from '../../bwrap/supervisor/client.js';
import type { DockerApi } from '../api.js';
import type { DockerEngine } from '../engine.js';
import { createExec, Frames, startExec } from '../exec.js';

/**
 * perl -e LAUNCH <size>: reads <size> bytes of stdin (sysread: nothing past them) into a memfd
 * (memfd_create by number: x86_64 319, aarch64 279) and execs it as "rft-agent", stdin and stdout
 * still the exec's stream.
 */
export const LAUNCH = `use Config; my $n = shift; my $name = "rft-agent"; my $nr = $Config{archname} =~ /aarch64/ ? 279 : 319;
my $fd = syscall($nr, $name, 0); exit 121 if $fd < 0; open(my $m, ">&=", $fd) or exit 121;
my ($buf, $left) = ("", $n); while ($left > 0) { my $r = sysread(STDIN, $buf, $left > 65536 ? 65536 : $left); exit 122 unless $r; syswrite($m, $buf) == $r or exit 121; $left -= $r; }
exec { "/proc/self/fd/$fd" } "rft-agent" or exit 123;`;

/** How long the agent may take to answer "ready" (one exec and a 75 KB copy; generous for a loaded engine). */
export const AGENT_START_TIMEOUT_MS = 30_000;

export interface AgentCommandSpec {
  cwd: string;
  limits: string;
  argv: string[];
  env: string[];
  stdin?: string | Buffer;
  resultChannel?: boolean;
  streamed?: boolean;
  /** Bytes kept per stream; 0 = all. */
  cap: number;
}

/** How the agent's stream ended: the exec's exit code (null: unknown, the engine did not say). */
export interface AgentEnd {
  exitCode: number | null;
}

interface Running {
  data: ((stream: Stream, data: Buffer) => void)[];
  settle(exit: CommandExit): void;
  fail(e: unknown): void;
}

export class AgentChannel {
  private readonly running = new Map<number, Running>();
  private nextId = 1;
  private readonly reader = new FrameReader((r) => this.dispatch(r));
  private ready: ((pid: number) => void) | null = null;
  private endReason: unknown = null;
  /** The agent's pid in the container, once ready. */
  pid = 0;
  /** Resolves once the stream is closed, with what the engine says of the agent's exit. */
  readonly ended: Promise<AgentEnd>;
  private markEnded!: () => void;

  private constructor(
    private readonly api: DockerApi,
    private readonly execId: string,
    private readonly sock: Socket,
  ) {
    const closed = new Promise<void>((r) => (this.markEnded = r));
    this.ended = closed.then(() => this.exitOf());
  }

  /** Starts the agent in `container` as `user`; rejects when it does not come up (the caller falls back to execs). */
  static async start(engine: DockerEngine, container: string, user: string, binary: Buffer, timeoutMs = AGENT_START_TIMEOUT_MS): Promise<AgentChannel> {
    return engine.use(async (api) => {
      const execId = await createExec(api, { container, argv: ['perl', '-e', LAUNCH, String(binary.length)], env: [], workingDir: '/', user });
      const { sock, rest } = await startExec(api, execId);
      const ch = new AgentChannel(api, execId, sock);
      const up = new Promise<number>((resolve) => (ch.ready = resolve));
      const demux = new Frames((stream, data) => {
        if (stream === 1) ch.reader.push(data);
      });
      sock.on('data', (c: Buffer) => demux.push(c));
      const onClose = (): void => ch.closed();
      sock.on('close', onClose);
      sock.on('end', () => sock.destroy());
      sock.on('error', () => sock.destroy());
      if (rest.length) demux.push(rest);
      sock.write(binary);
      let timer: NodeJS.Timeout | undefined;
      const failed = (why: string): Promise<never> => Promise.reject(errors.sandboxFailed(`the sandbox agent did not start: ${why}`));
      try {
        ch.pid = await Promise.race([
          up,
          ch.ended.then((end) => failed(`it exited (${end.exitCode ?? 'unknown'})`)),
          new Promise<never>((_, reject) => (timer = setTimeout(() => reject(errors.sandboxFailed('the sandbox agent did not answer')), timeoutMs))),
        ]);
      } catch (e) {
        sock.destroy();
        throw e;
      } finally {
        clearTimeout(timer);
      }
      return ch;
    });
  }

  /** Whether the stream is still open. */
  get open(): boolean {
    return !this.sock.destroyed;
  }

  /** Starts a command; fails only through `exited` (with the reason the channel closed, see fail()). */
  run(spec: AgentCommandSpec): Command {
    const id = this.nextId;
    this.nextId = this.nextId >= 0xfffffff0 ? 1 : this.nextId + 1;
    const listeners: ((stream: Stream, data: Buffer) => void)[] = [];
    const { exited, settle, fail, done } = commandEnd();
    if (this.endReason !== null) {
      fail(this.endReason);
    } else {
      // A stream already closed but not yet classified: the command waits for what its end means (fail()).
      this.running.set(id, { data: listeners, settle, fail });
      const flags = `${spec.resultChannel ? 'r' : ''}${spec.streamed ? 's' : ''}`;
      if (this.open) this.sock.write(frame('X', id, ['', '', '', spec.cwd, spec.limits, nulList(spec.argv), nulList(spec.env), spec.stdin ?? '', flags, String(spec.cap)]));
    }
    return commandHandle(id, exited, listeners, (type, fields) => {
      if (!done() && this.open) this.sock.write(frame(type, id, fields));
    });
  }

  /**
   * Fails every running command with `reason` and every later one too (the sandbox decides what
   * the end meant: sandbox.ts), and closes the stream: the agent, on EOF, kills what it runs.
   */
  fail(reason: unknown): void {
    this.endReason ??= reason;
    for (const [id, r] of this.running) {
      this.running.delete(id);
      r.fail(this.endReason);
    }
    this.sock.destroy();
  }

  /** Closes the stream; its commands wait for what the end means (the owner's fail()). */
  drop(): void {
    this.sock.destroy();
  }

  /** Ends the channel: the agent kills what it runs and exits. */
  close(): void {
    this.fail(errors.sandboxInterrupted());
  }

  /** What the engine says of the agent's exec once its stream closed (exit code null: it did not say). */
  private async exitOf(): Promise<AgentEnd> {
    for (let i = 0; i < 10; i++) {
      const info = await this.api.call<{ Running: boolean; ExitCode: number | null }>('GET', `/exec/${this.execId}/json`, undefined, { ok: [404] }).catch(() => null);
      if (!info || info.status === 404) return { exitCode: null };
      if (!info.body.Running) return { exitCode: info.body.ExitCode };
      await new Promise((r) => setTimeout(r, 100));
    }
    return { exitCode: null };
  }

  private closed(): void {
    this.markEnded();
  }

  private dispatch(r: Reply): void {
    const { type, id, fields, text } = r;
    if (type === 'R') {
      if (id === 0 && this.ready) this.ready(Number(text(2)));
      this.ready = null;
    } else if (type in STREAMS) {
      const run = this.running.get(id);
      const data = fields[0];
      if (run && data) for (const cb of run.data) cb(STREAMS[type] as Stream, data);
    } else if (type === 'x') {
      const run = this.running.get(id);
      if (!run) return;
      this.running.delete(id);
      run.settle(commandExit(r));
    }
  }
}
