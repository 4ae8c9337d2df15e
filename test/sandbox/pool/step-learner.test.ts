import { describe, expect, it } from 'vitest';
import { StepLearner } from '../../../src/sandbox/pool/step-learner.js';

/** `n` arrivals 10 ms apart from `t0`; returns the time of the last. */
function burst(l: StepLearner, t0: number, n: number): number {
  for (let i = 0; i < n; i++) l.arrive(t0 + i * 10);
  return t0 + (n - 1) * 10;
}

describe('step learner', () => {
  it('counts arrivals closer than the gap as one burst and expects the next step to be as large', () => {
    const l = new StepLearner(2_000, 60_000);
    const end = burst(l, 0, 500);
    expect(l.inBurst(end + 1_999)).toBe(true);
    expect(l.inBurst(end + 2_000)).toBe(false);
    expect(l.predicted()).toBe(500);
  });

  it('expects the largest of the last three bursts, so a one-off larger one is forgotten', () => {
    const l = new StepLearner(2_000, 600_000);
    let t = burst(l, 0, 900); // an evaluation pass, say
    for (let i = 0; i < 3; i++) t = burst(l, t + 30_000, 100);
    expect(l.predicted()).toBe(900); // the fourth burst is still under way: not yet counted as closed
    t = burst(l, t + 30_000, 100);
    expect(l.predicted()).toBe(100);
  });

  it('is idle once no arrival came for the idle timeout, and before any', () => {
    const l = new StepLearner(2_000, 60_000);
    expect(l.idle(0)).toBe(true);
    const end = burst(l, 1_000, 10);
    expect(l.idle(end + 59_999)).toBe(false);
    expect(l.idle(end + 60_000)).toBe(true);
  });
});
