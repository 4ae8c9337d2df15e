// The short kill loop (bench/kill-loop.ts runs 25 rounds): 5 rounds of load with kill -9 at a
// random moment and a restart each; the guarantees must hold in every one.
import { expect, it } from 'vitest';
import { killLoop } from '../../bench/lib/kill-loop.js';
import { describeIf } from '../helpers/require.js';
import { driversPresent } from '../sandbox/helpers.js';

const present = await driversPresent();

describeIf(present.bwrap, 'the kill loop', 'bwrap sandbox driver not available')('kill -9 in a loop (5 rounds, bwrap sandboxes)', () => {
  it('loses no acknowledged call, runs none twice, overspends no budget, leaves no sandbox, and never charges, shows or grades what a restart cut', async () => {
    const r = await killLoop({ rounds: 5, sandbox: 'bwrap' });
    expect(r.acknowledged).toBeGreaterThan(0);
    expect(r.retried).toBeGreaterThan(0);
    expect(r.coding.started).toBeGreaterThan(0);
    expect({
      lost: r.lost, ranTwice: r.ranTwice, overspent: r.overspent, sandboxesLeft: r.sandboxesLeft,
      interruptedCharged: r.interruptedCharged, interruptedShown: r.interruptedShown,
      replacedCalls: r.coding.replacedCalls, gradedReplaced: r.coding.gradedReplaced,
    }).toEqual({
      lost: 0, ranTwice: 0, overspent: 0, sandboxesLeft: 0,
      interruptedCharged: 0, interruptedShown: 0,
      replacedCalls: 0, gradedReplaced: 0,
    });
  }, 600_000);
});
