// The processes a pooled sandbox started while it waited for a rollout (SandboxSpec.prestarts: the
// rollout MCP servers', whose start is the slow part of a first bridged call), handed over with it.
// Each is claimed once, by its key; one that exited meanwhile is not handed out (the taker starts its
// own, as it would without a pool). What is never claimed runs until its sandbox goes. A spec's
// `ready` (the MCP handshake) runs in the pool too, so the taker gets the process ready to use.
import type { PrestartedProcess, PrestartSpec, SandboxProcess, SandboxSpec } from '../types.js';

interface Entry {
  proc: SandboxProcess;
  ready: unknown;
  exited: boolean;
}

export class Prestarted {
  private readonly procs = new Map<string, Entry>();

  /**
   * Starts each spec with `spawn` and makes it ready (PrestartSpec.ready); one that cannot start or
   * be made ready is left out, stopped (its taker starts its own).
   */
  static async start(specs: readonly PrestartSpec[], spawn: (s: PrestartSpec) => Promise<SandboxProcess>): Promise<Prestarted> {
    const p = new Prestarted();
    await Promise.all(
      specs.map(async (s) => {
        const proc = await spawn(s).catch(() => null);
        if (!proc) return;
        const e: Entry = { proc, ready: undefined, exited: false };
        void proc.exited.then(() => {
          e.exited = true;
        });
        try {
          e.ready = await s.ready?.(proc);
        } catch {
          await proc.kill().catch(() => {});
          return;
        }
        p.procs.set(s.key, e);
      }),
    );
    return p;
  }

  /** Whether any is left to claim. */
  get size(): number {
    return this.procs.size;
  }

  /** The process started for `key`, once; null when there is none or it has exited. */
  claim(key: string): PrestartedProcess | null {
    const e = this.procs.get(key);
    if (!e) return null;
    this.procs.delete(key);
    return e.exited ? null : { process: e.proc, ready: e.ready };
  }

  /** Stops every unclaimed one (the sandbox goes to a taker that claims none: a grading sandbox). */
  async stop(): Promise<void> {
    const all = [...this.procs.values()];
    this.procs.clear();
    await Promise.all(all.map((e) => e.proc.kill().catch(() => {})));
  }
}

/**
 * How many pooled items of each kind (pool key) carry prestarts, or are being prepared with them: at
 * most `floor` each, so what they cost stays bounded whatever size the pool learns.
 */
export class PrestartQuota {
  private readonly counts = new Map<string, number>();

  constructor(private readonly floor: number) {}

  /** A place for an item of `key` about to start `spec`'s prestarts; false when there are none or the kind has its floor's worth. */
  reserve(key: string, spec: SandboxSpec): boolean {
    const n = this.counts.get(key) ?? 0;
    if (!spec.prestarts?.length || n >= this.floor) return false;
    this.counts.set(key, n + 1);
    return true;
  }

  /** The item left the pool (taken, discarded) or started none. */
  release(key: string): void {
    this.counts.set(key, Math.max(0, (this.counts.get(key) ?? 0) - 1));
  }
}

/** PoolOps.rank for items that may carry prestarts: a rollout (a spec with prestarts) takes those first, anything else those without. */
export function prestartRank(item: { prestarted?: Prestarted | undefined }, spec: SandboxSpec): number {
  return (item.prestarted ? 1 : 0) * (spec.prestarts?.length ? 1 : -1);
}
