import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Stopwatch } from '../../../src/cli/rollout/stopwatch.js';

// A fake clock: synchronous work is the clock moved by hand, a wait is a timer the clock runs.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Awaits p while the fake clock runs its timers. */
async function run<T>(p: Promise<T>): Promise<T> {
  await vi.runAllTimersAsync();
  return p;
}

describe('rollout stopwatch', () => {
  it('counts awaited time as waiting and synchronous work as own time', async () => {
    const sw = new Stopwatch();
    vi.advanceTimersByTime(30);
    await run(sw.wait(sleep(60)));
    vi.advanceTimersByTime(20);
    expect(sw.totals()).toEqual({ ownMs: 50, waitMs: 60 });
  });

  it('counts overlapping waits once, from the first start to the last end', async () => {
    const sw = new Stopwatch();
    await run(sw.wait(Promise.all([sw.wait(sleep(40)), sw.wait(sleep(80))])));
    expect(sw.totals()).toEqual({ ownMs: 0, waitMs: 80 });
  });
});
