// The Sandbox of every driver whose workspace is a host directory (bwrap, process): file operations
// go through HostWorkspace; commands are host programs built by the driver (`wrap`).
import { mkdir } from 'node:fs/promises';
import { errors } from '../errors.js';
import { copyBoundsFor, copyTree, CopyBudget, type CopyBounds, type CopyReport } from './copy-out.js';
import { HostWorkspace } from './host-fs.js';
import { workspaceComponents } from './paths.js';
import { runProgram, type RunOptions } from './run.js';
import { RESULT_FD, startProgram } from './spawn.js';
import { removeWorkdir, type Workdir } from './workdir.js';
import type { ExecOptions, ExecResult, FileEntry, Sandbox, SandboxLimits, SandboxProcess, SpawnOptions } from './types.js';

export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface WrappedCommand {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** Data the host program reads on fds 4, 5, ... (see runProgram). */
  inputFds?: (string | Buffer)[];
}

export interface LocalDriverHooks {
  /** Turns the user's argv into the host program to spawn. */
  wrap(argv: string[], cwd: string[], env: Record<string, string>): WrappedCommand;
  /** After a killed exec: reach processes that escaped the process group. `alone` = no other exec running. */
  afterKill?(w: Workdir, alone: boolean): Promise<void>;
  onDestroy?(sb: LocalSandbox): void;
}

export class LocalSandbox implements Sandbox {
  readonly id: string;
  readonly traceId: string;
  private readonly files: HostWorkspace;
  /** Execs and live spawned processes: a sweep of the sandbox uid must wait until it is alone. */
  private inflight = 0;
  private readonly processes = new Set<SandboxProcess>();
  private sweep: Promise<void> = Promise.resolve();
  private destroying: Promise<void> | null = null;

  constructor(
    readonly driver: 'bwrap' | 'process',
    readonly workdir: Workdir,
    private readonly limits: SandboxLimits,
    private readonly hooks: LocalDriverHooks,
  ) {
    this.id = workdir.meta.id;
    this.traceId = workdir.meta.traceId;
    const uid = workdir.meta.uid;
    this.files = new HostWorkspace(workdir.ws, uid !== null ? { uid, gid: uid } : null);
  }

  async exec(command: string | string[], opts: ExecOptions = {}): Promise<ExecResult> {
    if (this.destroying) throw errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
    const cwd = workspaceComponents(opts.cwd ?? '');
    const timeoutMs = opts.timeoutMs ?? this.limits.wallTimeoutMs;
    const maxOutputBytes = opts.maxOutputBytes ?? this.limits.maxOutputBytes;
    const signal = opts.signal !== undefined ? { signal: opts.signal } : {};
    const resultChannel = opts.resultChannel === true;
    this.inflight++;
    try {
      const { wrap, afterKill } = this.hooks;
      const uid = this.workdir.meta.uid;
      const env = resultChannel ? { ...opts.env, RFT_RESULT_FD: String(RESULT_FD) } : (opts.env ?? {});
      const runOpts: RunOptions = {
        ...wrap(argv, cwd, env),
        timeoutMs,
        maxOutputBytes,
        resultChannel,
        ...signal,
        ...(uid !== null ? { uid, gid: uid } : {}),
        ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
        // The sweep runs in the background so the result is not delayed by it; the next exec waits
        // for it, so it can never hit that exec's processes.
        ...(afterKill ? { onKill: async () => void (this.sweep = afterKill(this.workdir, this.inflight <= 1).catch(() => {})) } : {}),
      };
      await this.sweep;
      return await runProgram(runOpts);
    } finally {
      this.inflight--;
    }
  }

  async spawn(argv: string[], opts: SpawnOptions = {}): Promise<SandboxProcess> {
    if (this.destroying) throw errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    const cwd = workspaceComponents(opts.cwd ?? '');
    const env = opts.env ?? {};
    const uid = this.workdir.meta.uid;
    await this.sweep;
    const proc = startProgram({ ...this.hooks.wrap(argv, cwd, env), ...(uid !== null ? { uid, gid: uid } : {}) });
    // A live process counts as running, so no exec's sweep of the sandbox uid can take it down.
    this.inflight++;
    this.processes.add(proc);
    void proc.exited.then(() => {
      this.inflight--;
      this.processes.delete(proc);
    });
    if (this.destroying) {
      await proc.kill();
      throw errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    }
    return proc;
  }

  /** Activity only matters to the manager's TTL (TrackedSandbox); here it just runs. */
  hold<T>(work: () => Promise<T>): Promise<T> {
    return work();
  }

  readFile(path: string, opts?: { maxBytes?: number }): Promise<Buffer> {
    return this.files.readFile(path, opts);
  }

  writeFile(path: string, data: string | Buffer): Promise<void> {
    return this.files.writeFile(path, data);
  }

  listFiles(path?: string, opts?: { maxDepth?: number; maxEntries?: number }): Promise<FileEntry[]> {
    return this.files.listFiles(path, opts);
  }

  async copyOut(hostDir: string, bounds: CopyBounds = copyBoundsFor(this.limits)): Promise<CopyReport> {
    await mkdir(hostDir, { recursive: true });
    return copyTree(this.workdir.ws, hostDir, new CopyBudget(bounds));
  }

  destroy(): Promise<void> {
    this.destroying ??= (async () => {
      await Promise.all([...this.processes].map((p) => p.kill()));
      await removeWorkdir(this.workdir);
    })().finally(() => this.hooks.onDestroy?.(this));
    return this.destroying;
  }
}
