// The warm pool's sizing (src/sandbox/pool/warm-pool.ts) on a fake clock, apart from any driver: it
// grows to a step it has seen, shrinks after the idle timeout, and never passes its bounds.
import { afterEach, beforeEach, expect, it, describe, vi } from 'vitest';
import { POOL_STEPS_KEPT, WarmPool, type PoolOps } from '../../../src/sandbox/pool/warm-pool.js';
import { spec } from '../helpers.js';

// The pool's sizing, on a fake clock with items that cost nothing: what it holds at every moment.
describe('warm pool learning the step (fake clock)', () => {
  const GAP = 2_000;
  const IDLE = 60_000;
  /** Past the burst's end, with time to prepare 50 items at 20 ms each. */
  const SETTLED = GAP + 2_000;
  const pools: WarmPool<number>[] = [];
  beforeEach(() => {
    vi.useFakeTimers();
  });
  /** Closing waits for an item being made: the fake clock has to run meanwhile. */
  async function close(pool: WarmPool<number>): Promise<void> {
    const closing = pool.close();
    await vi.advanceTimersByTimeAsync(100);
    await closing;
  }
  afterEach(async () => {
    for (const p of pools.splice(0)) await close(p);
    vi.useRealTimers();
  });

  /** Items are numbers, each made in 20 ms (fake); `held` is what exists (made, not yet discarded or handed out). */
  function fakePool(floor: number, max: number) {
    const c = { made: 0, held: 0, peak: 0, discarded: 0 };
    const ops: PoolOps<number> = {
      make: () =>
        new Promise((resolve) =>
          setTimeout(() => {
            c.held++;
            c.peak = Math.max(c.peak, c.held);
            resolve(++c.made);
          }, 20),
        ),
      discard: async () => {
        c.held--;
        c.discarded++;
      },
      key: () => 'k',
      id: (n) => String(n),
    };
    const pool = new WarmPool({ floor, max, gapMs: GAP, idleMs: IDLE }, ops);
    pools.push(pool);
    /** A step: `n` new rollouts 5 ms apart; returns how many found one ready. */
    const step = async (n: number): Promise<number> => {
      let hits = 0;
      for (let i = 0; i < n; i++) {
        if (pool.take(spec(`trace_${i}`)) !== null) {
          hits++;
          c.held--; // handed to the rollout: no longer the pool's
        }
        await vi.advanceTimersByTimeAsync(5);
      }
      return hits;
    };
    return { pool, c, step };
  }

  it('grows to a step it has seen once the burst is over, serves the next step from it, and keeps it for a step seen twice', async () => {
    const { pool, c, step } = fakePool(2, 1_000);
    // The first step finds only the floor, refilled one at a time while it arrives (50 in 250 ms).
    expect(await step(50)).toBeLessThanOrEqual(15);
    expect(pool.stats()).toMatchObject({ predicted: 50, target: 2 }); // the burst is still arriving: the floor only
    await vi.advanceTimersByTimeAsync(SETTLED);
    expect(pool.stats()).toMatchObject({ warm: 50, target: 50, predicted: 50 });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(await step(50)).toBe(50);
    await vi.advanceTimersByTimeAsync(SETTLED);
    expect(pool.stats()).toMatchObject({ warm: 50, target: 50, predicted: 50 });
    expect(pool.stats().hits + pool.stats().misses).toBe(100);
    expect(c.held).toBe(50);
    await close(pool);
  });

  it('shrinks back to its floor once no new rollout came for the idle timeout', async () => {
    const { pool, c, step } = fakePool(2, 1_000);
    await step(40);
    await vi.advanceTimersByTimeAsync(SETTLED);
    expect(pool.stats().warm).toBe(40);
    await vi.advanceTimersByTimeAsync(IDLE - SETTLED - 1_000);
    expect(pool.stats().warm).toBe(40);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(pool.stats()).toMatchObject({ warm: 2, target: 2 });
    expect(c.held).toBe(2);
    expect(c.discarded).toBe(38);
    await close(pool);
    expect(c.held).toBe(0);
  });

  it('never holds more than its bound (the budget or the cap), however large the steps', async () => {
    const { pool, c, step } = fakePool(2, 10);
    for (const n of [50, 50, 200]) {
      await step(n);
      await vi.advanceTimersByTimeAsync(SETTLED);
      expect(pool.stats()).toMatchObject({ warm: 10, target: 10, predicted: n });
      await vi.advanceTimersByTimeAsync(20_000);
    }
    expect(c.peak).toBe(10);
    await close(pool);
  });

  it('a refill with `parallel` prepares that many at once, and never more than the step or the bound', async () => {
    let inFlight = 0;
    let peakInFlight = 0;
    let made = 0;
    let held = 0;
    let peakHeld = 0;
    const ops: PoolOps<number> = {
      make: () => {
        inFlight++;
        peakInFlight = Math.max(peakInFlight, inFlight);
        return new Promise((resolve) =>
          setTimeout(() => {
            inFlight--;
            held++;
            peakHeld = Math.max(peakHeld, held);
            resolve(++made);
          }, 1_000),
        );
      },
      discard: async () => {
        held--;
      },
      key: () => 'k',
      id: (n) => String(n),
    };
    const pool = new WarmPool({ floor: 1, max: 30, gapMs: GAP, idleMs: IDLE, parallel: 4 }, ops);
    pools.push(pool);
    for (let i = 0; i < 20; i++) if (pool.take(spec(`trace_${i}`)) !== null) held--;
    // The step of 20 is learned once its burst is over; at 1 s an item, 4 at once fill it in about 5 s, not 20.
    await vi.advanceTimersByTimeAsync(GAP + 6_000);
    expect(peakInFlight).toBe(4);
    expect(pool.stats()).toMatchObject({ warm: 20, target: 20 });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(peakHeld).toBe(20);
    await close(pool);
  });

  it('prepares only while its gate allows (the memory budget has room), gives back what it is asked to shed, and refills once the gate opens', async () => {
    const { pool, c, step } = fakePool(2, 1_000);
    let room = 5;
    pool.gate(() => c.held < room);
    await step(40);
    await vi.advanceTimersByTimeAsync(SETTLED);
    expect(pool.stats()).toMatchObject({ warm: 5, target: 40 });
    expect(c.peak).toBe(5);
    expect(pool.shed(3)).toBe(3);
    expect(pool.stats().warm).toBe(2);
    expect(pool.shed(10)).toBe(2);
    expect(pool.stats().warm).toBe(0);
    expect(c).toMatchObject({ held: 0, discarded: 5 });
    room = 1_000;
    pool.release(spec('trace_0'));
    await vi.advanceTimersByTimeAsync(SETTLED);
    expect(pool.stats().warm).toBe(40);
    await close(pool);
  });

  it('with no learning (a zero bound) keeps the floor only', async () => {
    const { pool, c, step } = fakePool(2, 0);
    await step(50);
    await vi.advanceTimersByTimeAsync(SETTLED);
    expect(pool.stats()).toMatchObject({ warm: 2, target: 2, predicted: 50 });
    await step(50);
    expect(c.peak).toBe(2);
    await close(pool);
  });

  // Docker's pool test saw it at load 7 (60 s without its floor): a refill that fails (the engines full
  // of rollouts) while a rollout's release asks for another ended, and the release's ask was dropped.
  it('refills after a failed refill when a release asked for one meanwhile', async () => {
    let full = true;
    let made = 0;
    const ops: PoolOps<number> = {
      make: () => {
        const fails = full; // as the engines were when the creation was placed
        return new Promise((resolve, reject) => setTimeout(() => (fails ? reject(new Error('engines full')) : resolve(++made)), 20));
      },
      discard: async () => {},
      key: () => 'k',
      id: (n) => String(n),
    };
    const pool = new WarmPool({ floor: 2, max: 0, gapMs: GAP, idleMs: IDLE }, ops);
    pools.push(pool);
    expect(pool.take(spec('trace_a'))).toBeNull(); // a miss: the refill to the floor starts, and fails
    await vi.advanceTimersByTimeAsync(10);
    full = false; // the rollout's container goes while that refill is still trying
    pool.release(spec('trace_a'));
    await vi.advanceTimersByTimeAsync(200);
    expect(pool.stats().warm).toBe(2);
  });

  it('keeps the last POOL_STEPS_KEPT steps with their hits and misses, and counts what rollouts hold until released', async () => {
    const { pool, step } = fakePool(2, 1_000);
    const sizes = Array.from({ length: POOL_STEPS_KEPT + 3 }, (_, i) => 3 + i);
    for (const n of sizes) {
      await step(n);
      await vi.advanceTimersByTimeAsync(SETTLED + 10_000);
    }
    const [kind] = pool.stats().kinds;
    expect(kind!.steps.map((s) => s.size)).toEqual(sizes.slice(-POOL_STEPS_KEPT));
    // Each step found the previous one's size prepared: all but one of its rollouts were hits.
    for (const s of kind!.steps) expect(s).toMatchObject({ hits: s.size - 1, misses: 1 });
    expect(kind!.inUse).toBe(sizes.reduce((a, b) => a + b, 0));
    for (let i = 0; i < 5; i++) pool.release(spec(`trace_${i}`));
    expect(pool.stats().kinds[0]!.inUse).toBe(sizes.reduce((a, b) => a + b, 0) - 5);
    await close(pool);
  });
});
