// The Sandbox handed to tools and graders: delegates to the driver's sandbox, records activity for
// the inactivity TTL, and routes destroy() through the manager so the slot and the entry are freed
// whoever destroys it (told whether the removal succeeded: a record of a sandbox that is still there
// must stay, so that it is removed later).
import type { CopyBounds, CopyReport } from '../workspace/copy-out.js';
import type { ExecOptions, ExecResult, FileEntry, PrestartedProcess, Sandbox, SandboxAdmin, SandboxProcess, SandboxRef, SpawnOptions } from '../types.js';

export class TrackedSandbox implements Sandbox {
  lastUsed = Date.now();
  inflight = 0;
  private destroyed: Promise<void> | null = null;

  constructor(
    readonly inner: Sandbox,
    private readonly onDestroy: (sb: TrackedSandbox, removed: boolean) => void,
    private readonly onExec?: (command: string | string[], result: ExecResult) => void,
    /** Created by this process (holds a slot of its cap); false when opened from another replica's record. */
    readonly owned = true,
  ) {}

  get ref(): SandboxRef | undefined {
    return this.inner.ref;
  }

  /** A task-image sandbox's grader operations (its grader holds the sandbox while it runs them: hold()). */
  get admin(): SandboxAdmin | undefined {
    return this.inner.admin;
  }

  get id(): string {
    return this.inner.id;
  }
  get driver(): string {
    return this.inner.driver;
  }
  get traceId(): string {
    return this.inner.traceId;
  }
  async memoryBytes(): Promise<number | null> {
    return (await this.inner.memoryBytes?.()) ?? null;
  }
  get memoryRlimit(): 'data' | 'address-space' | undefined {
    return this.inner.memoryRlimit;
  }
  get isDestroyed(): boolean {
    return this.destroyed !== null;
  }

  private async use<T>(op: () => Promise<T>): Promise<T> {
    this.inflight++;
    this.lastUsed = Date.now();
    try {
      return await op();
    } finally {
      this.inflight--;
      this.lastUsed = Date.now();
    }
  }

  exec(command: string | string[], opts?: ExecOptions): Promise<ExecResult> {
    const run = this.use(() => this.inner.exec(command, opts));
    const onExec = this.onExec;
    return onExec ? run.then((r) => (onExec(command, r), r)) : run;
  }
  /** A live process does not hold the sandbox open: the inactivity TTL still applies, and destroy kills it. */
  spawn(argv: string[], opts?: SpawnOptions): Promise<SandboxProcess> {
    return this.use(() => this.inner.spawn(argv, opts));
  }
  hold<T>(work: () => Promise<T>): Promise<T> {
    return this.use(work);
  }
  readFile(path: string, opts?: { maxBytes?: number }): Promise<Buffer> {
    return this.use(() => this.inner.readFile(path, opts));
  }
  writeFile(path: string, data: string | Buffer): Promise<void> {
    return this.use(() => this.inner.writeFile(path, data));
  }
  listFiles(path?: string, opts?: { maxDepth?: number; maxEntries?: number }): Promise<FileEntry[]> {
    return this.use(() => this.inner.listFiles(path, opts));
  }
  copyOut(hostDir: string, bounds?: CopyBounds): Promise<CopyReport> {
    return this.use(() => this.inner.copyOut(hostDir, bounds));
  }
  async cpuSeconds(): Promise<number | null> {
    return (await this.inner.cpuSeconds?.()) ?? null;
  }
  claimPrestarted(key: string): PrestartedProcess | null {
    return this.inner.claimPrestarted?.(key) ?? null;
  }

  destroy(): Promise<void> {
    this.destroyed ??= this.inner.destroy().then(
      () => this.onDestroy(this, true),
      (e: unknown) => {
        this.onDestroy(this, false);
        throw e;
      },
    );
    return this.destroyed;
  }
}
