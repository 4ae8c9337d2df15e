// The Sandbox shared by the bwrap and process drivers: the workspace is a host directory, commands
// are host programs built by the driver (`wrap`), file operations go through HostWorkspace.
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { HostWorkspace } from './host-fs.js';
import { workspaceComponents } from './paths.js';
import { runProgram, type RunOptions } from './run.js';
import { removeWorkdir, type Workdir } from './workdir.js';
import type { ExecOptions, ExecResult, FileEntry, Sandbox, SandboxLimits } from './types.js';

const run = promisify(execFile);

export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface WrappedCommand {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  extraFds?: (string | Buffer)[];
}

export interface LocalDriverHooks {
  /** Turns the user's argv into the host program to spawn. `cwd` is validated workspace-relative components. */
  wrap(argv: string[], cwd: string[], env: Record<string, string>, w: Workdir): WrappedCommand;
  /** After a killed exec: reach processes that escaped the process group. `alone` = no other exec running. */
  afterKill?(w: Workdir, alone: boolean): Promise<void>;
  onDestroy?(sb: LocalSandbox): void;
}

export class LocalSandbox implements Sandbox {
  readonly id: string;
  readonly traceId: string;
  private readonly files: HostWorkspace;
  private inflight = 0;
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
    if (this.destroying) throw new Error(`sandbox ${this.id} is destroyed`);
    const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
    const cwd = workspaceComponents(opts.cwd ?? '');
    const wrapped = this.hooks.wrap(argv, cwd, opts.env ?? {}, this.workdir);
    const uid = this.workdir.meta.uid;
    const runOpts: RunOptions = {
      ...wrapped,
      timeoutMs: opts.timeoutMs ?? this.limits.wallTimeoutMs,
      maxOutputBytes: opts.maxOutputBytes ?? this.limits.maxOutputBytes,
      ...(uid !== null ? { uid, gid: uid } : {}),
      ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
      ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
      ...(this.hooks.afterKill ? { onKill: () => this.hooks.afterKill!(this.workdir, this.inflight <= 1) } : {}),
    };
    this.inflight++;
    try {
      return await runProgram(runOpts);
    } finally {
      this.inflight--;
    }
  }

  readFile(path: string): Promise<Buffer> {
    return this.files.readFile(path);
  }

  writeFile(path: string, data: string | Buffer): Promise<void> {
    return this.files.writeFile(path, data);
  }

  listFiles(path?: string, opts?: { maxDepth?: number; maxEntries?: number }): Promise<FileEntry[]> {
    return this.files.listFiles(path, opts);
  }

  async copyOut(hostDir: string): Promise<void> {
    await mkdir(hostDir, { recursive: true });
    // -a keeps symlinks as links (never followed into the host) and copies special files as such.
    await run('cp', ['-a', '--reflink=auto', '--no-preserve=ownership', `${this.workdir.ws}/.`, hostDir]);
  }

  destroy(): Promise<void> {
    this.destroying ??= removeWorkdir(this.workdir).finally(() => this.hooks.onDestroy?.(this));
    return this.destroying;
  }
}
