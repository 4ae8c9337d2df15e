// Ids minted for rollouts and calls sort by time (so the record's trace_id and call_id indexes grow at
// their end), never repeat, and keep their random part whole (some are credentials).
import { expect, it } from 'vitest';
import { timeOrderedId } from '../../src/rollout/ids.js';

it('sorts by time, then never repeats within a millisecond', () => {
  const times = [0, 1, 35, 36, 1_796_400_000_000, 1_796_400_000_001, 2 ** 46];
  const ids = times.map((t) => timeOrderedId('rw_', 8, 'hex', t));
  expect([...ids].sort()).toEqual(ids);
  for (const id of ids) expect(id).toMatch(/^rw_[0-9a-z]{9}[0-9a-f]{16}$/);
  const same = new Set(Array.from({ length: 10_000 }, () => timeOrderedId('rw_', 8, 'hex', 1_796_400_000_000)));
  expect(same.size).toBe(10_000);
});

it('takes its random part from a pool refilled whole: every id across refills is new and as long as asked', () => {
  // 4 KiB of pool per 256 ids of 16 bytes: 5,000 ids cross about 20 refills, and odd sizes cross a refill's edge.
  const ids = Array.from({ length: 5_000 }, (_, i) => timeOrderedId('x_', 16 + (i % 3), 'base64url', 0));
  expect(new Set(ids).size).toBe(ids.length);
  for (const [i, id] of ids.entries()) expect(Buffer.from(id.slice(11), 'base64url').length).toBe(16 + (i % 3));
  // the random parts are not constant across bytes (a pool read past its fill would repeat zeros)
  const bytes = Buffer.concat(ids.map((id) => Buffer.from(id.slice(11), 'base64url')));
  expect(new Set(bytes).size).toBeGreaterThan(200);
  expect(() => timeOrderedId('x_', 0)).toThrow(RangeError);
});
