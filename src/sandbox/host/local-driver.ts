// What the bwrap and process drivers share: workdirs under the sandboxes root, population from the
// template, a warm pool, and reaping by directory. A driver says how commands run (a CommandRunner
// per workdir) and how the privileged host steps are done (HostOps).
import { rmdir } from 'node:fs/promises';
import { spawnOps, type HostOps } from './host-ops.js';
import { LocalSandbox, type CommandRunner } from './local-sandbox.js';
import { createWorkdir, prepareRoot, reapWorkdirs, removeWorkdir, tmpfsCaps, writeMeta, INSTANCE_LABEL, type Workdir } from './workdir.js';
import { Prestarted, PrestartQuota, prestartRank } from '../pool/prestarted.js';
import { WarmPool } from '../pool/warm-pool.js';
import { poolSizing, type WarmLearning } from '../pool/settings.js';
import { populateWorkspace } from '../workspace/workspace.js';
import { canSwitchUid } from './uids.js';
import { workspaceComponents } from '../workspace/paths.js';
import type { Sandbox, SandboxDriver, SandboxSpec, WarmPoolStats } from '../types.js';

export interface LocalDriverOptions {
  /** Where workspaces live; must be searchable (o+x) all the way up when the server runs as root. */
  sandboxesRoot: string;
  /** Names this server across restarts, so a new process reaps what a crashed one left. */
  instanceId: string;
  /** Sandboxes kept prepared for new rollouts (default 0); the server uses 2. */
  warmPool?: number;
  /**
   * Let the pool learn the trainer's step (../pool/warm-pool.ts): it grows beyond `warmPool` to the
   * expected burst, within `maxMb` (at the driver's measured cost of a prepared sandbox) and `cap`,
   * and shrinks back after `idleMs` without a new rollout. Absent: the floor only.
   */
  warmLearning?: WarmLearning;
  /**
   * Host directories no sandbox may see, wherever they are (the templates root with the hidden
   * tests, the data dir, this package): bwrap hides any that lies inside a directory it binds.
   */
  hiddenPaths?: string[];
}

/** A pool key for people: the workspace's tmpfs caps (none: the process driver's plain directory) and read-only mounts. */
function describeKind(fs: Workdir['fs'], mounts: string[]): string {
  const disk = fs ? `tmpfs ${Math.round(fs.bytes / 2 ** 20)} MB, ${fs.inodes} inodes` : 'no tmpfs cap';
  return mounts.length ? `${disk}; read-only ${mounts.join(', ')}` : disk;
}

interface Prepared {
  w: Workdir;
  runner: CommandRunner;
  /** What it started while in the pool (SandboxSpec.prestarts); only the floor's worth of items per key has any. */
  prestarted?: Prestarted;
  /** Its pool key, with `prestarted`. */
  key?: string;
}

export abstract class LocalDriver implements SandboxDriver {
  abstract readonly name: string;
  protected readonly live = new Set<string>();
  private poolInstance: WarmPool<Prepared> | null = null;
  /** The manager's gate on the pool's refills (the memory budget's room), given before or after the pool is made. */
  private poolGate: (() => boolean) | undefined;
  private rootReady: Promise<void> | null = null;
  /** Which pooled items start the prestarts: the floor's worth per kind. */
  private readonly quota: PrestartQuota;

  constructor(protected readonly opts: LocalDriverOptions) {
    this.quota = new PrestartQuota(opts.warmPool ?? 0);
  }

  abstract available(): Promise<boolean>;

  /**
   * What one prepared, idle sandbox costs the host, KB (what the pool's memory budget is divided by).
   * Measured for bwrap (bench/idle-cost.ts --prepared, 200 sandboxes: 262 KB of its two processes'
   * PSS, 470 KB of kernel memory, 4 KB of tmpfs, 2 KB of the supervisor); the process driver's
   * workdir costs less (no process) and is counted the same, an upper bound.
   */
  protected readonly preparedKb: number = 768;

  /** How commands run in this workdir (bwrap: builds the sandbox around it). */
  protected abstract runnerFor(w: Workdir, spec: SandboxSpec): Promise<CommandRunner>;

  /** Mounts, unmounts and uid-wide kills. */
  protected get ops(): HostOps {
    return spawnOps;
  }

  // Lazy: `name` is a subclass field, not set yet while this constructor runs.
  private get pool(): WarmPool<Prepared> {
    this.poolInstance ??= new WarmPool(poolSizing(this.opts.warmPool ?? 0, this.opts.warmLearning, this.preparedKb), {
      make: (spec) => this.prepare(spec),
      discard: (p) => {
        this.leaveQuota(p);
        return this.discard(p);
      },
      rank: (p, spec) => prestartRank(p, spec),
      taken: (p) => this.leaveQuota(p),
      key: (spec) => this.poolKey(spec),
      id: (p) => p.w.meta.id,
      describe: (spec) => describeKind(canSwitchUid() ? tmpfsCaps(spec.limits) : undefined, spec.readOnlyMounts ?? []),
    });
    if (this.poolGate) this.poolInstance.gate(this.poolGate);
    return this.poolInstance;
  }

  gatePool(mayPrepare: () => boolean): void {
    this.poolGate = mayPrepare;
    this.poolInstance?.gate(mayPrepare);
  }

  shedPool(n: number): number {
    return this.poolInstance?.shed(n) ?? 0;
  }

  private poolKey(spec: SandboxSpec): string {
    return JSON.stringify([canSwitchUid() ? tmpfsCaps(spec.limits) : null, spec.readOnlyMounts ?? []]);
  }

  private leaveQuota(p: Prepared): void {
    if (p.prestarted && p.key !== undefined) this.quota.release(p.key);
  }

  private async prepare(spec: SandboxSpec, populate = false): Promise<Prepared> {
    // A pooled item of a rollout's kind starts the prestarts while fewer than the floor's worth of that kind have them.
    const key = this.poolKey(spec);
    const prestarts = !populate && this.quota.reserve(key, spec) ? spec.prestarts! : null;
    let w: Workdir | undefined;
    try {
      w = await createWorkdir(this.opts.sandboxesRoot, this.name, spec, this.ops);
      const uid = w.meta.uid;
      // The workspace is filled while the driver builds the sandbox around it.
      const [runner] = await Promise.all([this.runnerFor(w, spec), populate ? populateWorkspace(w.ws, spec, uid !== null ? { uid, gid: uid } : null) : null]);
      if (!prestarts) return { w, runner };
      const prestarted = await Prestarted.start(prestarts, (p) => runner.spawn(p.argv, workspaceComponents(p.cwd ?? ''), p.env ?? {}, spec.limits));
      if (prestarted.size > 0) return { w, runner, prestarted, key };
      this.quota.release(key);
      return { w, runner };
    } catch (e) {
      if (prestarts) this.quota.release(key);
      if (w) await removeWorkdir(w, this.ops);
      throw e;
    }
  }

  private async discard(p: Prepared): Promise<void> {
    await p.runner.close().catch(() => {});
    await removeWorkdir(p.w, this.ops);
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    this.rootReady ??= prepareRoot(this.opts.sandboxesRoot).catch((e: unknown) => {
      this.rootReady = null;
      throw e;
    });
    await this.rootReady;
    const labeled = { ...spec, labels: { ...spec.labels, [INSTANCE_LABEL]: this.opts.instanceId } };
    const pool = this.pool;
    let p = pool.take(labeled);
    if (p) {
      const w = p.w;
      this.live.add(w.meta.id);
      try {
        // A taker that claims none (a grading sandbox) gets none running.
        if (p.prestarted && !spec.prestarts?.length) await p.prestarted.stop();
        w.meta = { ...w.meta, traceId: spec.traceId, createdAt: new Date().toISOString() };
        await writeMeta(w);
        await populateWorkspace(w.ws, spec, w.meta.uid !== null ? { uid: w.meta.uid, gid: w.meta.uid } : null);
      } catch (e) {
        this.live.delete(w.meta.id);
        pool.release(labeled);
        await this.discard(p);
        throw e;
      }
    } else {
      p = await this.prepare(labeled, true).catch((e: unknown) => {
        pool.release(labeled);
        throw e;
      });
      this.live.add(p.w.meta.id);
    }
    const id = p.w.meta.id;
    return new LocalSandbox(
      this.name,
      p.w,
      spec.limits,
      p.runner,
      async (w) => {
        try {
          await removeWorkdir(w, this.ops);
        } finally {
          this.live.delete(id);
          pool.release(labeled);
        }
      },
      spec.prestarts?.length ? p.prestarted : undefined,
    );
  }

  /** The warm pool's state (empty before the first sandbox). */
  poolStats(): WarmPoolStats {
    return this.pool.stats();
  }

  /** Removes this instance's workdirs that no live sandbox of this process owns. */
  reapOrphans(): Promise<number> {
    return reapWorkdirs(this.opts.sandboxesRoot, this.opts.instanceId, (id) => this.live.has(id) || (this.poolInstance?.has(id) ?? false), this.ops);
  }

  /** Removes the prepared sandboxes (live ones are their owners' to destroy), and the root if empty. */
  async close(): Promise<void> {
    await this.poolInstance?.close();
    this.rootReady = null;
    await rmdir(this.opts.sandboxesRoot).catch(() => {}); // still holds live or orphaned workdirs: keep it
  }
}
