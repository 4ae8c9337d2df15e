// Every route fuzzed in process (bench/lib/fuzz.ts; bench/fuzz.ts runs 100,000 requests): no 5xx
// but "could not record" and "could not grade", no crash, no hang, a flat heap.
import { expect, it } from 'vitest';
import { describeFailure, fuzzRoutes } from '../../bench/lib/fuzz.js';

it('answers 3,000 generated requests across every route without an unexpected 5xx, a crash, a hang or a growing heap', async () => {
  const seed = Date.now() % 2 ** 31;
  const r = await fuzzRoutes({ requests: 3_000, seed, hangMs: 60_000 });
  // Printed so a failure can be replayed: node --import tsx bench/fuzz.ts 3000 <seed>
  expect({ seed, failures: r.failures.map(describeFailure), crashes: r.crashes }).toEqual({ seed, failures: [], crashes: [] });
  expect(r.requests).toBe(3_000);
  // Statuses of every kind were reached, success included.
  expect(Object.keys(r.byStatus)).toEqual(expect.arrayContaining(['200', '400', '401', '404']));
  // Heap after a full GC: the end of the run within 24 MB of its start.
  const start = Math.min(...r.heapMb.slice(0, 3));
  expect(Math.max(...r.heapMb.slice(-3)) - start).toBeLessThan(24);
}, 600_000);
