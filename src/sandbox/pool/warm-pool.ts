// Sandboxes' host sides prepared ahead (a workdir with its uid claimed and its tmpfs mounted; for
// bwrap also the sandbox itself, built by bubblewrap around its holder), so a new rollout's first
// call only gets its files. Items are matched by key (what they were prepared for).
//
// The pool learns the trainer's step (step-learner.ts): once a burst of new rollouts is over, it
// prepares as many as the next step is expected to start, during the model's think time and the
// pause between steps, so the next step's rollouts find theirs ready. It never prepares while a burst
// is arriving (that would compete with the burst's own creations), never holds more than `max` beyond
// the floor (the driver's cap and RFT_SANDBOX_WARM_MAX_MB), and falls back to the floor once no new rollout
// came for the idle timeout. Under the server's memory budget (RFT_MEMORY_BUDGET_MB) the manager gates
// its refills (gate) and takes its prepared items back for rollouts waiting for room (shed). A burst larger than the pool just prepares the rest on demand.
//
// What it does is shown (stats(): /metrics and the dashboard): per key its prepared and in-use
// sandboxes, the learned step, and the last few steps with how many of their new rollouts it served.
import type { SandboxSpec, WarmPoolBounds, WarmPoolStats, WarmPoolStep } from '../types.js';
import { StepLearner } from './step-learner.js';

export interface PoolOps<T> {
  make(spec: SandboxSpec): Promise<T>;
  discard(item: T): Promise<void>;
  /** What an item prepared for `spec` can serve (its tmpfs caps, read-only mounts). */
  key(spec: SandboxSpec): string;
  id(item: T): string;
  /** The key, for people (default: the key itself). */
  describe?(spec: SandboxSpec): string;
  /** How well an item suits `spec` among those of its key (the highest is taken first; default: all alike, oldest first). */
  rank?(item: T, spec: SandboxSpec): number;
  /** The item leaves the pool for a rollout (called before the refill this take starts). */
  taken?(item: T): void;
}

export interface PoolSizing {
  /** Kept prepared whatever the arrivals, for the latest key (RFT_SANDBOX_WARM). */
  floor: number;
  /** The most the learned size may reach: the driver's cap and the memory budget, whichever is less (0: no learning). */
  max: number;
  /** Quiet time that ends a burst of arrivals. */
  gapMs: number;
  /** Quiet time after which the pool shrinks back to the floor. */
  idleMs: number;
  /** What `max` was worked out from, shown with the pool's state (stats().bounds); not used here. */
  shown?: Pick<WarmPoolBounds, 'budgetMb' | 'preparedKb' | 'cap'>;
  /**
   * Items prepared at once by a refill (default 1). Docker's containers take a second or more each under
   * gVisor: one at a time, a step of 128 (a Harbor step, bench/harbor-step.ts) was 19 ready after a 20 s pause.
   */
  parallel?: number;
}

/** Steps kept per key for display (the learner keeps its own, shorter, history). */
export const POOL_STEPS_KEPT = 8;

interface Slot<T> {
  /** The latest spec taken with this key (what refills are prepared from). */
  spec: SandboxSpec;
  ready: T[];
  learner: StepLearner;
  /** Taken for rollouts and not released yet. */
  inUse: number;
  /** Being prepared now (counted toward its target, so parallel refills do not overshoot it). */
  making: number;
  /** The last steps, oldest first (at most POOL_STEPS_KEPT). */
  steps: WarmPoolStep[];
}

/** Timers fire no earlier than asked, but the wall clock may read a little behind the timers' clock. */
const TIMER_MARGIN_MS = 10;

export class WarmPool<T> {
  private readonly slots = new Map<string, Slot<T>>();
  private latest: Slot<T> | null = null;
  private filling: Promise<void> | null = null;
  /** A refill was asked for while one ran: the running one may end on a failure without meeting it. */
  private refillAsked = false;
  private readonly discarding = new Set<Promise<void>>();
  private closed = false;
  private hits = 0;
  private misses = 0;
  private quietTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Asked before each item is prepared: false holds the refill (the memory budget has no room for one). */
  private mayPrepare: () => boolean = () => true;

  constructor(
    private readonly sizing: PoolSizing,
    private readonly ops: PoolOps<T>,
  ) {}

  /** Prepares items only while `mayPrepare` says so (the server's memory budget has room); a refill resumes on the next take, release or settle. */
  gate(mayPrepare: () => boolean): void {
    this.mayPrepare = mayPrepare;
  }

  /**
   * Gives back up to `n` prepared items (rollouts waiting for room in the memory budget come before
   * what the pool prepared for rollouts to come), those of other keys than the latest first; how many.
   */
  shed(n: number): number {
    let shed = 0;
    const order = [...this.slots.values()].filter((s) => s !== this.latest);
    if (this.latest) order.push(this.latest);
    for (const slot of order) {
      while (shed < n && slot.ready.length > 0) {
        this.discard(slot.ready.pop()!);
        shed++;
      }
    }
    return shed;
  }

  has(id: string): boolean {
    for (const s of this.slots.values()) if (s.ready.some((item) => this.ops.id(item) === id)) return true;
    return false;
  }

  /** A prepared item for `spec`, or null (then the caller prepares one); a refill to the floor starts. */
  take(spec: SandboxSpec): T | null {
    const key = this.ops.key(spec);
    let slot = this.slots.get(key);
    if (!slot) {
      slot = { spec, ready: [], learner: new StepLearner(this.sizing.gapMs, this.sizing.idleMs), inUse: 0, making: 0, steps: [] };
      this.slots.set(key, slot);
    }
    slot.spec = spec;
    const now = Date.now();
    if (slot.learner.arrive(now)) {
      slot.steps.push({ startedAt: now, lastAt: now, size: 0, hits: 0, misses: 0 });
      if (slot.steps.length > POOL_STEPS_KEPT) slot.steps.shift();
    }
    this.latest = slot;
    const item = this.pick(slot.ready, spec);
    const step = slot.steps[slot.steps.length - 1]!;
    step.size++;
    step.lastAt = now;
    if (item) {
      this.ops.taken?.(item);
      this.hits++;
      step.hits++;
    } else {
      this.misses++;
      step.misses++;
    }
    slot.inUse++;
    this.arm();
    this.fill();
    return item;
  }

  /** Removes and returns the ready item that suits `spec` best (the oldest among equals), or null. */
  private pick(ready: T[], spec: SandboxSpec): T | null {
    const rank = this.ops.rank;
    if (!rank || ready.length < 2) return ready.shift() ?? null;
    let best = 0;
    let bestRank = rank(ready[0]!, spec);
    for (let i = 1; i < ready.length; i++) {
      const r = rank(ready[i]!, spec);
      if (r > bestRank) {
        best = i;
        bestRank = r;
      }
    }
    return ready.splice(best, 1)[0]!;
  }

  /**
   * A sandbox taken for `spec` (a hit or a miss) is gone: destroyed, or its creation failed. Every
   * take is released once, so `inUse` counts what rollouts hold.
   */
  release(spec: SandboxSpec): void {
    const slot = this.slots.get(this.ops.key(spec));
    if (slot && slot.inUse > 0) slot.inUse--;
    // Room was freed: a refill that stopped at the driver's cap (Docker places warm containers only
    // where rollouts left room) goes on.
    this.fill();
  }

  stats(): WarmPoolStats {
    const now = Date.now();
    const { floor, max, gapMs, idleMs, shown } = this.sizing;
    const slots = this.latest ? [this.latest, ...[...this.slots.values()].filter((s) => s !== this.latest)] : [...this.slots.values()];
    return {
      warm: this.total(),
      target: this.latest ? this.target(this.latest, now) : 0,
      predicted: this.latest?.learner.predicted() ?? 0,
      hits: this.hits,
      misses: this.misses,
      bounds: { floor, max, gapMs, idleMs, budgetMb: shown?.budgetMb ?? null, preparedKb: shown?.preparedKb ?? null, cap: shown?.cap ?? null },
      kinds: slots.map((s) => ({
        kind: this.ops.describe?.(s.spec) ?? this.ops.key(s.spec),
        latest: s === this.latest,
        warm: s.ready.length,
        inUse: s.inUse,
        target: this.target(s, now),
        predicted: s.learner.predicted(),
        steps: s.steps.map((step) => ({ ...step })),
      })),
    };
  }

  /** Settles the pool when the burst is over (it grows to the step) and when training stops (it shrinks). */
  private arm(): void {
    if (this.sizing.max <= 0) return; // nothing learned: the floor only, as refilled on each take
    if (this.quietTimer) this.quietTimer.refresh();
    else this.quietTimer = setTimeout(() => this.settle(), this.sizing.gapMs + TIMER_MARGIN_MS).unref();
    if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(() => this.settle(), this.sizing.idleMs + TIMER_MARGIN_MS).unref();
  }

  private target(slot: Slot<T>, now: number): number {
    const floor = slot === this.latest ? this.sizing.floor : 0;
    const l = slot.learner;
    const learned = l.inBurst(now) || l.idle(now) ? 0 : Math.min(l.predicted(), this.sizing.max);
    return Math.max(floor, learned);
  }

  private total(): number {
    let n = 0;
    for (const s of this.slots.values()) n += s.ready.length;
    return n;
  }

  /** Discards what is beyond each key's target (never during its burst: the burst is taking them), then refills. */
  private settle(): void {
    if (this.closed) return;
    const now = Date.now();
    for (const [key, slot] of this.slots) {
      if (slot.learner.inBurst(now)) continue;
      const extra = slot.ready.length - this.target(slot, now);
      for (const item of extra > 0 ? slot.ready.splice(slot.ready.length - extra, extra) : []) this.discard(item);
      if (slot !== this.latest && slot.ready.length === 0 && slot.inUse === 0 && slot.making === 0 && slot.learner.idle(now)) this.slots.delete(key);
    }
    this.fill();
  }

  private discard(item: T): void {
    const p = this.ops.discard(item).catch(() => {}); // a workdir left behind is reaped at the next start
    this.discarding.add(p);
    void p.finally(() => this.discarding.delete(p));
  }

  /** The slot to prepare an item for next (the latest key first), or null when every one is at its target. */
  private next(): Slot<T> | null {
    let making = 0;
    for (const s of this.slots.values()) making += s.making;
    if (this.closed || this.total() + making >= Math.max(this.sizing.floor, this.sizing.max) || !this.mayPrepare()) return null;
    const now = Date.now();
    const order = this.latest ? [this.latest, ...this.slots.values()] : [...this.slots.values()];
    return order.find((s) => s.ready.length + s.making < this.target(s, now)) ?? null;
  }

  private fill(): void {
    if (this.filling) {
      this.refillAsked = true;
      return;
    }
    if (!this.next()) return;
    this.refillAsked = false;
    let failed = false;
    // `parallel` workers, each preparing the next item wanted until none is; the first failure stops them all.
    const worker = async (): Promise<void> => {
      for (let slot = this.next(); slot && !failed; slot = this.next()) {
        slot.making++;
        let item: T;
        try {
          item = await this.ops.make({ ...slot.spec, traceId: '(pooled)', files: {} });
        } catch (e) {
          failed = true; // a failed refill only costs the next rollouts the on-demand path
          throw e;
        } finally {
          slot.making--;
        }
        if (this.closed) await this.ops.discard(item);
        else slot.ready.push(item);
      }
    };
    this.filling = Promise.allSettled(Array.from({ length: Math.max(1, this.sizing.parallel ?? 1) }, worker))
      .then(() => {})
      .finally(() => {
        this.filling = null;
        // What changed while it failed (a rollout's sandbox released room) gets one more try; a
        // refill that failed with nothing asked meanwhile waits for the next take or release.
        if (failed && this.refillAsked) this.fill();
      });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.quietTimer);
    clearTimeout(this.idleTimer);
    await this.filling;
    const all = [...this.slots.values()].flatMap((s) => s.ready.splice(0));
    await Promise.all([...this.discarding, ...all.map((item) => this.ops.discard(item).catch(() => {}))]);
  }
}
