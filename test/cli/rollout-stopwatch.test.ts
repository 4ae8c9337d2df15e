import { describe, expect, it } from 'vitest';
import { Stopwatch } from '../../src/cli/rollout-stopwatch.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function busy(ms: number) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin: synchronous work of the emulator
  }
}

describe('rollout stopwatch', () => {
  it('counts awaited time as waiting and synchronous work as own time', async () => {
    const sw = new Stopwatch();
    busy(30);
    await sw.wait(sleep(60));
    busy(20);
    const { ownMs, waitMs } = sw.totals();
    expect(ownMs).toBeGreaterThanOrEqual(50);
    expect(ownMs).toBeLessThan(150);
    expect(waitMs).toBeGreaterThanOrEqual(55);
  });

  it('counts overlapping waits once, from the first start to the last end', async () => {
    const sw = new Stopwatch();
    await sw.wait(Promise.all([sw.wait(sleep(40)), sw.wait(sleep(80))]));
    const { waitMs } = sw.totals();
    expect(waitMs).toBeGreaterThanOrEqual(75);
    expect(waitMs).toBeLessThan(250);
  });
});
