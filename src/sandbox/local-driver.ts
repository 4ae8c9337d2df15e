// What the bwrap and process drivers share: workdirs under the sandboxes root, population
// from the template, and reaping by directory. A driver only says how a command runs.
import { rmdir } from 'node:fs/promises';
import { LocalSandbox, type LocalDriverHooks } from './local-sandbox.js';
import { prepareRoot, reapWorkdirs, removeWorkdir, INSTANCE_LABEL, type Workdir } from './workdir.js';
import { WorkdirPool } from './workdir-pool.js';
import { populateWorkspace } from './workspace.js';
import { killAllOf } from './uids.js';
import type { Sandbox, SandboxDriver, SandboxSpec } from './types.js';

export interface LocalDriverOptions {
  /** Where workspaces live; must be searchable (o+x) all the way up when the server runs as root. */
  sandboxesRoot: string;
  /** Names this server across restarts, so a new process reaps what a crashed one left. */
  instanceId: string;
  /** Workdirs kept prepared for new rollouts (default 0); the server uses 2. */
  warmPool?: number;
  /**
   * Host directories no sandbox may see, wherever they are (the templates root with the hidden
   * tests, the data dir, this package): bwrap hides any that lies inside a directory it binds.
   */
  hiddenPaths?: string[];
}

/**
 * Runs when an exec's process group is gone. setsid'd children left the group, so the sandbox uid is
 * what still names them. A concurrent exec of the same sandbox would die too, hence only when this
 * exec was the only one.
 */
export async function sweepUid(w: Workdir, alone: boolean): Promise<void> {
  if (alone && w.meta.uid !== null) await killAllOf(w.meta.uid);
}

export abstract class LocalDriver implements SandboxDriver {
  abstract readonly name: 'bwrap' | 'process';
  protected readonly live = new Set<string>();
  private poolInstance: WorkdirPool | null = null;
  private rootReady: Promise<void> | null = null;

  constructor(protected readonly opts: LocalDriverOptions) {}

  // Lazy: `name` is a subclass field, not set yet while this constructor runs.
  private get pool(): WorkdirPool {
    this.poolInstance ??= new WorkdirPool(this.opts.sandboxesRoot, this.name, this.opts.warmPool ?? 0);
    return this.poolInstance;
  }

  abstract available(): Promise<boolean>;

  /** How commands run in this workdir; called once the workspace is populated. */
  protected abstract hooks(w: Workdir, spec: SandboxSpec): Omit<LocalDriverHooks, 'onDestroy'> | Promise<Omit<LocalDriverHooks, 'onDestroy'>>;

  async create(spec: SandboxSpec): Promise<Sandbox> {
    this.rootReady ??= prepareRoot(this.opts.sandboxesRoot).catch((e: unknown) => {
      this.rootReady = null;
      throw e;
    });
    await this.rootReady;
    const labels = { ...spec.labels, [INSTANCE_LABEL]: this.opts.instanceId };
    const w = await this.pool.take({ ...spec, labels });
    this.live.add(w.meta.id);
    let hooks: Omit<LocalDriverHooks, 'onDestroy'>;
    try {
      const uid = w.meta.uid;
      await populateWorkspace(w.ws, spec, uid !== null ? { uid, gid: uid } : null);
      hooks = await this.hooks(w, { ...spec, labels });
    } catch (e) {
      await removeWorkdir(w);
      this.live.delete(w.meta.id);
      throw e;
    }
    return new LocalSandbox(this.name, w, spec.limits, { afterKill: sweepUid, ...hooks, onDestroy: (s) => this.live.delete(s.id) });
  }

  /** Removes this instance's workdirs that no live sandbox of this process owns. */
  reapOrphans(): Promise<number> {
    return reapWorkdirs(this.opts.sandboxesRoot, this.opts.instanceId, (id) => this.live.has(id) || (this.poolInstance?.has(id) ?? false));
  }

  /** Removes the prepared workdirs (live sandboxes are their owners' to destroy), and the root if empty. */
  async close(): Promise<void> {
    await this.poolInstance?.close();
    this.rootReady = null;
    await rmdir(this.opts.sandboxesRoot).catch(() => {}); // still holds live or orphaned workdirs: keep it
  }
}
