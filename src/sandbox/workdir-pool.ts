// A few workdirs prepared ahead (uid claimed, tmpfs mounted and chowned), so a new rollout's first
// call does not wait for the `mount` spawn and friends. Refilled in the background after each take;
// a burst that drains it just falls back to creating workdirs on demand.
import { canSwitchUid } from './uids.js';
import { createWorkdir, removeWorkdir, tmpfsCaps, writeMeta, type Workdir } from './workdir.js';
import type { SandboxSpec } from './types.js';

export class WorkdirPool {
  private readonly ready: Workdir[] = [];
  private filling: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly root: string,
    private readonly driver: string,
    private readonly size: number,
  ) {}

  has(id: string): boolean {
    return this.ready.some((w) => w.meta.id === id);
  }

  /** A workdir for `spec`: a pooled one when its tmpfs caps match, else a new one. */
  async take(spec: SandboxSpec): Promise<Workdir> {
    const want = canSwitchUid() ? tmpfsCaps(spec.limits) : undefined;
    const i = this.ready.findIndex((w) => w.fs?.bytes === want?.bytes && w.fs?.inodes === want?.inodes);
    const pooled = i >= 0 ? this.ready.splice(i, 1)[0] : undefined;
    let w: Workdir;
    if (pooled) {
      pooled.meta = { ...pooled.meta, traceId: spec.traceId, createdAt: new Date().toISOString() };
      await writeMeta(pooled);
      w = pooled;
    } else {
      w = await createWorkdir(this.root, this.driver, spec);
    }
    this.refill(spec);
    return w;
  }

  private refill(spec: SandboxSpec): void {
    if (this.size <= 0 || this.closed || this.filling) return;
    this.filling = (async () => {
      while (!this.closed && this.ready.length < this.size) {
        const w = await createWorkdir(this.root, this.driver, { ...spec, traceId: '(pooled)', files: {} });
        if (this.closed) await removeWorkdir(w);
        else this.ready.push(w);
      }
    })()
      .catch(() => {}) // a failed refill only costs the next rollout the on-demand path
      .finally(() => {
        this.filling = null;
      });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.filling;
    await Promise.all(this.ready.splice(0).map(removeWorkdir));
  }
}
