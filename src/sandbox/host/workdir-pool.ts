// A few sandboxes' host sides prepared ahead (a workdir with its uid claimed and its tmpfs mounted;
// for bwrap also the sandbox itself, built by bubblewrap around its holder), so a new rollout's first
// call only gets its files. Refilled in the background after each take; a burst that drains it just
// falls back to preparing on demand. Items are matched by key (what they were prepared for).
import type { SandboxSpec } from '../types.js';

export interface PoolOps<T> {
  make(spec: SandboxSpec): Promise<T>;
  discard(item: T): Promise<void>;
  /** What an item prepared for `spec` can serve (its tmpfs caps, read-only mounts). */
  key(spec: SandboxSpec): string;
  id(item: T): string;
}

export class WarmPool<T> {
  private readonly ready: { key: string; item: T }[] = [];
  private filling: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly ops: PoolOps<T>,
  ) {}

  has(id: string): boolean {
    return this.ready.some((r) => this.ops.id(r.item) === id);
  }

  /** A prepared item for `spec`, or null (then the caller prepares one); either way a refill starts. */
  take(spec: SandboxSpec): T | null {
    const key = this.ops.key(spec);
    const i = this.ready.findIndex((r) => r.key === key);
    const pooled = i >= 0 ? this.ready.splice(i, 1)[0] : undefined;
    this.refill(spec, key);
    return pooled?.item ?? null;
  }

  private refill(spec: SandboxSpec, key: string): void {
    if (this.size <= 0 || this.closed || this.filling) return;
    this.filling = (async () => {
      while (!this.closed && this.ready.length < this.size) {
        const item = await this.ops.make({ ...spec, traceId: '(pooled)', files: {} });
        if (this.closed) await this.ops.discard(item);
        else this.ready.push({ key, item });
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
    await Promise.all(this.ready.splice(0).map((r) => this.ops.discard(r.item)));
  }
}
