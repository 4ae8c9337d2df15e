// The order a replay re-sends calls in: by arrival (seq), with calls whose recorded
// [started_at, finished_at] intervals overlap sent together, as the model's parallel calls were.
import type { RecordedCallJson } from './source.js';

export interface ReplayPlan {
  groups: RecordedCallJson[][];
  /** Calls that never finished (running or interrupted): nothing to compare against. */
  skipped: RecordedCallJson[];
}

export function planReplay(calls: readonly RecordedCallJson[]): ReplayPlan {
  const sorted = [...calls].sort((a, b) => a.seq - b.seq);
  const skipped = sorted.filter((c) => c.finished_at === null || c.output === null);
  const groups: RecordedCallJson[][] = [];
  let groupEnd = -Infinity;
  for (const c of sorted) {
    if (skipped.includes(c)) continue;
    const start = Date.parse(c.started_at ?? '');
    const end = Date.parse(c.finished_at ?? '');
    const current = groups.at(-1);
    if (current && start < groupEnd) {
      current.push(c);
      groupEnd = Math.max(groupEnd, end);
    } else {
      groups.push([c]);
      groupEnd = end;
    }
  }
  return { groups, skipped };
}
