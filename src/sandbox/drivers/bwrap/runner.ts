// Commands of one bwrap sandbox: the sandbox (namespaces, mounts, seccomp filter) is built once by
// bubblewrap around a holder process, through the driver's supervisor; each command enters it with
// its own PID, mount and IPC namespaces (supervisor/enter.c), so it costs about one process spawn and
// everything it starts dies with it. A sandbox whose holder is gone (the supervisor restarted, the
// holder was killed from the host) is built again around the same workspace on its next command:
// only the commands running at that moment are lost, with RFT_ERR_SANDBOX_INTERRUPTED (503).
import { dirname } from 'node:path';
import { errors, RftError } from '../../../errors.js';
import { argsPayload, BWRAP_FDS, bwrapArgs, passwdFiles, type HideArgs } from './args.js';
import { rlimitSpec } from '../../workspace/limits.js';
import type { CommandRunner, RunRequest } from '../../host/local-sandbox.js';
import { SANDBOX_PATH } from '../../host/local-sandbox.js';
import { WORKSPACE_MOUNT } from '../../workspace/paths.js';
import { commandStdio, type Command, type Supervisor } from './supervisor/client.js';
import type { Workdir } from '../../host/workdir.js';
import type { ExecResult, ProcessExit, SandboxLimits, SandboxProcess } from '../../types.js';

export const BWRAP = '/usr/bin/bwrap';
/** The holder: PID 1 of the sandbox's PID namespace, echoes one line (the sandbox is built), then waits. */
const HOLDER = '/usr/bin/cat';

export interface BwrapSandboxSetup {
  hide: HideArgs;
  seccomp: Buffer;
  readOnlyMounts: readonly string[];
}

let nextSandbox = 1;

export class BwrapRunner implements CommandRunner {
  /** This sandbox's number at the supervisor, and the supervisor's start it belongs to. */
  private current: { id: number; epoch: number } | null = null;
  private building: Promise<number> | null = null;
  private readonly processes = new Set<SandboxProcess>();
  private readonly commands = new Set<Command>();
  private closed = false;
  private readonly stopListening: () => void;

  private constructor(
    private readonly sup: Supervisor,
    private readonly w: Workdir,
    private readonly setup: BwrapSandboxSetup,
  ) {
    this.stopListening = sup.onSandboxGone((id) => {
      if (this.current?.id === id) this.current = null;
    });
  }

  /** A runner whose sandbox is built (the workdir's directories must exist). */
  static async start(sup: Supervisor, w: Workdir, setup: BwrapSandboxSetup): Promise<BwrapRunner> {
    const r = new BwrapRunner(sup, w, setup);
    try {
      await r.sandbox();
    } catch (e) {
      r.stopListening();
      throw e;
    }
    return r;
  }

  private get uid(): number {
    return this.w.meta.uid ?? process.getuid?.() ?? 0;
  }

  /** The sandbox's number at the supervisor, built first if it has none (or lost it). */
  private sandbox(): Promise<number> {
    if (this.closed) return Promise.reject(errors.sandboxFailed(`sandbox ${this.w.meta.id} was destroyed`));
    if (this.current && this.current.epoch === this.sup.epoch) return Promise.resolve(this.current.id);
    this.building ??= this.build().finally(() => {
      this.building = null;
    });
    return this.building;
  }

  private async build(): Promise<number> {
    await this.sup.ready();
    const id = nextSandbox++;
    const epoch = this.sup.epoch;
    const ids = passwdFiles(this.uid);
    const args = bwrapArgs({ ws: this.w.ws, tmp: this.w.tmp, shm: this.w.shm, cwd: [], hide: this.setup.hide, readOnlyMounts: this.setup.readOnlyMounts });
    // fds 4, 5, 6, 7 in this order (BWRAP_FDS); the supervisor adds the info fd after them.
    const info = BWRAP_FDS.seccomp + 1;
    await this.sup.createSandbox(id, {
      uid: this.uid,
      gid: this.uid,
      ...(this.w.fs ? { tmpfs: dirname(this.w.ws) } : {}),
      argv: [BWRAP, '--args', String(BWRAP_FDS.args), '--info-fd', String(info), '--', HOLDER],
      fds: [argsPayload(args), ids.passwd, ids.group, this.setup.seccomp],
    });
    this.current = { id, epoch };
    if (this.closed) await this.sup.destroySandbox(id).catch(() => {});
    return id;
  }

  /** Starts a command in the sandbox (built first if needed); returns it and the sandbox it runs in. */
  private async run(argv: string[], cwd: string[], env: Record<string, string>, o: { limits: SandboxLimits; stdin?: string | Buffer; resultChannel?: boolean; streamed?: boolean; cap: number }): Promise<{ cmd: Command; sandbox: number }> {
    const sandbox = await this.sandbox();
    const cmd = this.sup.run({
      sandbox,
      uid: this.uid,
      gid: this.uid,
      cwd: [WORKSPACE_MOUNT, ...cwd].join('/'),
      limits: rlimitSpec(o.limits),
      argv,
      env: { PATH: SANDBOX_PATH, HOME: WORKSPACE_MOUNT, LANG: 'C.UTF-8', TMPDIR: '/tmp', ...env },
      cap: o.cap,
      ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
      ...(o.resultChannel ? { resultChannel: true } : {}),
      ...(o.streamed ? { streamed: true } : {}),
    });
    return { cmd, sandbox };
  }

  /** Maps a failure of ours to its error (never the command's own doing) and forgets a dead sandbox. */
  private failure(f: string, sandbox: number): Error {
    if (f === 'lost' || f === 'gone') {
      if (this.current?.id === sandbox) this.current = null;
      return this.closed ? errors.sandboxFailed(`sandbox ${this.w.meta.id} was destroyed`) : errors.sandboxInterrupted();
    }
    return errors.sandboxFailed(`sandbox setup failed: ${f}`);
  }

  async exec(argv: string[], cwd: string[], env: Record<string, string>, req: RunRequest): Promise<ExecResult> {
    const started = performance.now();
    // A sandbox found gone before the command started ("gone": nothing ran) is rebuilt once.
    for (let attempt = 0; ; attempt++) {
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      const res: Buffer[] = [];
      let timedOut = false;
      const { cmd, sandbox } = await this.run(argv, cwd, env, {
        limits: req.limits,
        cap: req.maxOutputBytes,
        ...(req.stdin !== undefined ? { stdin: req.stdin } : {}),
        resultChannel: req.resultChannel,
      });
      this.commands.add(cmd);
      cmd.onData((stream, data) => (stream === 'stdout' ? out : stream === 'stderr' ? err : res).push(data));
      const timer = setTimeout(() => {
        timedOut = true;
        cmd.kill();
      }, req.timeoutMs);
      const onAbort = (): void => cmd.kill();
      req.signal?.addEventListener('abort', onAbort, { once: true });
      if (req.signal?.aborted) cmd.kill();
      try {
        const exit = await cmd.exited;
        if (exit.failure === 'gone' && attempt === 0 && !this.closed) {
          if (this.current?.id === sandbox) this.current = null;
          continue;
        }
        if (exit.failure) throw this.failure(exit.failure, sandbox);
        return {
          exitCode: exit.exitCode,
          signal: exit.signal,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
          stdoutTruncated: exit.truncated.stdout,
          stderrTruncated: exit.truncated.stderr,
          ...(req.resultChannel ? { result: Buffer.concat(res).toString('utf8') } : {}),
          timedOut,
          durationMs: Math.round((performance.now() - started) * 10) / 10,
        };
      } finally {
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
        this.commands.delete(cmd);
      }
    }
  }

  async spawn(argv: string[], cwd: string[], env: Record<string, string>, limits: SandboxLimits): Promise<SandboxProcess> {
    const { cmd, sandbox } = await this.run(argv, cwd, env, { limits, streamed: true, cap: 0 });
    const { stdin, stdout, stderr } = commandStdio(cmd);
    // A failure of the sandbox (its holder gone, the supervisor dead) is not the process's end: the
    // error the sandbox's calls answer (ours: interrupted, the workspace kept) is kept for endedBySandbox.
    let lost: Error | undefined;
    const exited = cmd.exited.then(
      (e): ProcessExit => {
        if (!e.failure) return { exitCode: e.exitCode, signal: e.signal };
        lost = this.failure(e.failure, sandbox);
        return { exitCode: null, signal: 'SIGKILL' };
      },
      (e: unknown): ProcessExit => {
        lost = e instanceof RftError ? e : errors.sandboxInterrupted();
        return { exitCode: null, signal: 'SIGKILL' };
      },
    );
    void exited.then(() => {
      stdout.end();
      stderr.end();
      this.processes.delete(proc);
    });
    const proc: SandboxProcess = {
      stdin,
      stdout,
      stderr,
      exited,
      endedBySandbox: async () => {
        await exited;
        return lost;
      },
      kill: async () => {
        cmd.kill();
        await exited;
      },
    };
    this.processes.add(proc);
    return proc;
  }

  /** Kills what runs and takes the sandbox down (its holder, and with it every process in it). */
  async close(): Promise<void> {
    this.closed = true;
    this.stopListening();
    for (const c of this.commands) c.kill();
    await this.building?.catch(() => {});
    const current = this.current;
    this.current = null;
    if (current && current.epoch === this.sup.epoch) await this.sup.destroySandbox(current.id).catch(() => {});
    await Promise.all([...this.processes].map((p) => p.kill()));
  }
}
