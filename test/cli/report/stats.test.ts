import { describe, expect, it } from 'vitest';
import { computeStats, expectedBestOfK } from '../../../src/cli/report/stats.js';
import type { RolloutResult } from '../../../src/cli/rollout/run.js';
import { renderTerminal } from '../../../src/cli/report/command.js';
import { renderHtml } from '../../../src/cli/report/html.js';

function result(row: number, t: number, score: number | null, extra: Partial<RolloutResult> = {}): RolloutResult {
  return {
    row,
    try: t,
    trace_id: `trace_${row}_${t}`,
    score,
    tool_calls: 2,
    steps: 3,
    max_steps_reached: false,
    latency_ms: 100,
    budget_exhausted: false,
    discarded: score === null,
    error: null,
    error_code: null,
    own_ms: 1,
    ...extra,
  };
}

/** E[max] over every k-subset, by enumeration: the definition the estimator must match. */
function bruteForceBest(scores: number[], k: number): number {
  let total = 0;
  let count = 0;
  const pick = (start: number, chosen: number[]) => {
    if (chosen.length === k) {
      total += Math.max(...chosen);
      count++;
      return;
    }
    for (let i = start; i < scores.length; i++) pick(i + 1, [...chosen, scores[i]!]);
  };
  pick(0, []);
  return total / count;
}

describe('report statistics', () => {
  it('estimates the expected best of k exactly as the mean max over all k-subsets', () => {
    const scores = [0.1, 0.9, 0.4, 0.4, 0, 1, 0.25];
    for (let k = 1; k <= scores.length; k++) expect(expectedBestOfK(scores, k)).toBeCloseTo(bruteForceBest(scores, k), 12);
  });

  it('gives the mean for k = 1 and the maximum for k = n', () => {
    expect(expectedBestOfK([0, 0.5, 1], 1)).toBeCloseTo(0.5, 12);
    expect(expectedBestOfK([0, 0.5, 1], 3)).toBe(1);
  });

  it('counts rows whose graded tries all scored the same as having no learning signal', () => {
    const s = computeStats([
      result(0, 0, 1), result(0, 1, 1), // no signal
      result(1, 0, 0), result(1, 1, 1), // signal
      result(2, 0, 0), result(2, 1, null), // one graded try: cannot tell
    ]);
    expect(s.noSignalRows).toBe(1);
    expect(s.comparableRows).toBe(2);
    expect(s.discarded).toBe(1);
  });

  it('stops the best-of-k curve at the fewest graded tries of any row so it never dips', () => {
    const s = computeStats([result(0, 0, 0), result(0, 1, 1), result(0, 2, 0.5), result(1, 0, 0.2), result(1, 1, 0.4), result(1, 2, null)]);
    expect(s.bestOfK.map((b) => b.k)).toEqual([1, 2]);
    expect(s.bestOfK[1]!.expectedBest).toBeCloseTo(((0.5 + 1 + 1) / 3 + 0.4) / 2, 12);
  });

  it('reports the budget exhaustion rate among rollouts where the server reported the budget', () => {
    const s = computeStats([result(0, 0, 1, { budget_exhausted: true }), result(0, 1, 1), result(0, 2, 1, { budget_exhausted: null })]);
    expect(s.budgetExhaustedRate).toBe(0.5);
  });
});

describe('row numbers', () => {
  it('count from 0 in the table and the HTML page, as the results file, a scripted model and check-grader do', () => {
    const stats = computeStats([result(0, 0, 1), result(0, 1, 0), result(1, 0, 0.5), result(1, 1, 0.5)]);
    const rows = renderTerminal(stats).split('\n').filter((l) => /^\s*\d+\s+2\s+2\s/.test(l)).map((l) => Number(l.trim().split(/\s+/)[0]));
    expect(rows).toEqual([0, 1]);
    const html = renderHtml(stats, 'results.jsonl');
    expect([...html.matchAll(/<tr(?: class="flat")?><td>(\d+)<\/td><td>2<\/td>/g)].map((m) => Number(m[1]))).toEqual([0, 1]);
  });
});
