// The reward door's rollout ids sort by time (so the record's trace_id indexes grow at their end)
// and never repeat.
import { expect, it } from 'vitest';
import { rewardTraceId } from '../../../src/doors/reward/door.js';

it('sorts by time, then never repeats within a millisecond', () => {
  const times = [0, 1, 35, 36, 1_796_400_000_000, 1_796_400_000_001, 2 ** 46];
  const ids = times.map((t) => rewardTraceId(t));
  expect([...ids].sort()).toEqual(ids);
  for (const id of ids) expect(id).toMatch(/^rw_[0-9a-z]{9}[0-9a-f]{16}$/);
  const same = new Set(Array.from({ length: 10_000 }, () => rewardTraceId(1_796_400_000_000)));
  expect(same.size).toBe(10_000);
});
