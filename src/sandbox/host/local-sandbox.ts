// The Sandbox of every driver whose workspace is a host directory (bwrap, process): file operations
// go through HostWorkspace; commands go to the driver's CommandRunner.
import { mkdir } from 'node:fs/promises';
import { errors } from '../../errors.js';
import { copyBoundsFor, copyTree, CopyBudget, type CopyBounds, type CopyReport } from '../workspace/copy-out.js';
import { HostWorkspace } from '../workspace/host-fs.js';
import { workspaceComponents } from '../workspace/paths.js';
import { cpuSecondsOfUid } from './cpu.js';
import { memoryOfUid } from './memory.js';
import type { Prestarted } from '../pool/prestarted.js';
import { RESULT_FD } from './spawn.js';
import type { Workdir } from './workdir.js';
import type { ExecOptions, ExecResult, FileEntry, PrestartedProcess, Sandbox, SandboxLimits, SandboxProcess, SpawnOptions } from '../types.js';

export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** One command as a driver runs it. */
export interface RunRequest {
  limits: SandboxLimits;
  stdin?: string | Buffer;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  resultChannel: boolean;
}

/** How a local driver runs commands in one sandbox's workdir. */
export interface CommandRunner {
  /** `cwd`: components below the workspace root, already checked. */
  exec(argv: string[], cwd: string[], env: Record<string, string>, req: RunRequest): Promise<ExecResult>;
  spawn(argv: string[], cwd: string[], env: Record<string, string>, limits: SandboxLimits): Promise<SandboxProcess>;
  /** Ends every process still running in the sandbox (it is being destroyed). */
  close(): Promise<void>;
}

export class LocalSandbox implements Sandbox {
  readonly id: string;
  readonly traceId: string;
  private readonly files: HostWorkspace;
  private destroying: Promise<void> | null = null;

  constructor(
    readonly driver: string,
    readonly workdir: Workdir,
    private readonly limits: SandboxLimits,
    private readonly runner: CommandRunner,
    /** Removes the workdir (kills the uid's processes, unmounts, deletes) and forgets the sandbox. */
    private readonly remove: (w: Workdir) => Promise<void>,
    /** What it started in the warm pool, for the taker to claim. */
    private readonly prestarted?: Prestarted,
  ) {
    this.id = workdir.meta.id;
    this.traceId = workdir.meta.traceId;
    const uid = workdir.meta.uid;
    this.files = new HostWorkspace(workdir.ws, uid !== null ? { uid, gid: uid } : null);
  }

  async exec(command: string | string[], opts: ExecOptions = {}): Promise<ExecResult> {
    if (this.destroying) throw errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
    const resultChannel = opts.resultChannel === true;
    const env = resultChannel ? { ...opts.env, RFT_RESULT_FD: String(RESULT_FD) } : (opts.env ?? {});
    return this.runner.exec(argv, workspaceComponents(opts.cwd ?? ''), env, {
      limits: this.limits,
      timeoutMs: opts.timeoutMs ?? this.limits.wallTimeoutMs,
      maxOutputBytes: opts.maxOutputBytes ?? this.limits.maxOutputBytes,
      resultChannel,
      ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
      ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
    });
  }

  async spawn(argv: string[], opts: SpawnOptions = {}): Promise<SandboxProcess> {
    if (this.destroying) throw errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    const proc = await this.runner.spawn(argv, workspaceComponents(opts.cwd ?? ''), opts.env ?? {}, this.limits);
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

  async cpuSeconds(): Promise<number | null> {
    const uid = this.workdir.meta.uid;
    return uid === null || this.destroying ? null : cpuSecondsOfUid(uid);
  }

  async memoryBytes(): Promise<number | null> {
    const uid = this.workdir.meta.uid;
    return uid === null || this.destroying ? null : memoryOfUid(uid);
  }

  claimPrestarted(key: string): PrestartedProcess | null {
    return this.destroying ? null : (this.prestarted?.claim(key) ?? null);
  }

  destroy(): Promise<void> {
    this.destroying ??= (async () => {
      await this.runner.close();
      await this.remove(this.workdir);
    })();
    return this.destroying;
  }
}
