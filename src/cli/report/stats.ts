// Numbers a user needs before training on a dataset: which rows vary across tries (the only ones
// that teach anything), how much best-of-k beats the mean, tool use, latency and budget pressure.
import type { RolloutResult } from '../rollout/run.js';

export interface RowStats {
  row: number;
  tries: number;
  /** Graded tries (discarded ones have no score). */
  scores: number[];
  mean: number | null;
  best: number | null;
  worst: number | null;
  /** best - worst: 0 means every try scored the same. */
  spread: number | null;
  std: number | null;
}

export interface Distribution {
  mean: number | null;
  p50: number | null;
  p95: number | null;
  max: number | null;
}

export interface BestOfK {
  k: number;
  /** Mean over rows of the expected best score of k tries (k = 1 is the mean of row means). */
  expectedBest: number;
  rows: number;
}

export interface ReportStats {
  rollouts: number;
  graded: number;
  discarded: number;
  rows: RowStats[];
  meanScore: number | null;
  /** Rows with at least 2 graded tries, all equal: no learning signal. */
  noSignalRows: number;
  /** Rows with at least 2 graded tries (the denominator of the no-signal share). */
  comparableRows: number;
  toolCalls: Distribution;
  /** Rollouts per number of tool calls. */
  toolCallHistogram: Map<number, number>;
  latencyMs: Distribution;
  /** Share of rollouts whose budget was exceeded, among those where the server reported it. */
  budgetExhaustedRate: number | null;
  maxStepsRate: number;
  bestOfK: BestOfK[];
}

const EPS = 1e-9;

export function mean(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** Nearest-rank percentile. */
export function percentile(xs: readonly number[], p: number): number | null {
  if (xs.length === 0) return null;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function distribution(xs: readonly number[]): Distribution {
  return { mean: mean(xs), p50: percentile(xs, 50), p95: percentile(xs, 95), max: xs.length ? Math.max(...xs) : null };
}

/**
 * Unbiased estimate of E[max of k draws] from n observed scores (the pass@k estimator generalised to
 * real scores): sorted ascending, score i (1-based) is the max of a k-subset with probability
 * C(i-1, k-1) / C(n, k). The weights are built from i = n downwards to avoid big binomials.
 */
export function expectedBestOfK(scores: readonly number[], k: number): number {
  const n = scores.length;
  if (k < 1 || k > n) throw new RangeError(`k must be in 1..${n}, got ${k}`);
  const s = [...scores].sort((a, b) => a - b);
  let w = k / n; // C(n-1, k-1) / C(n, k)
  let total = 0;
  for (let i = n; i >= k; i--) {
    total += w * s[i - 1]!;
    w *= (i - k) / (i - 1 || 1);
  }
  return total;
}

function rowStats(row: number, results: RolloutResult[]): RowStats {
  const scores = results.filter((r) => r.score !== null).map((r) => r.score as number);
  const m = mean(scores);
  const best = scores.length ? Math.max(...scores) : null;
  const worst = scores.length ? Math.min(...scores) : null;
  const std = m === null ? null : Math.sqrt(scores.reduce((a, x) => a + (x - m) ** 2, 0) / scores.length);
  return { row, tries: results.length, scores, mean: m, best, worst, spread: best === null || worst === null ? null : best - worst, std };
}

export function computeStats(results: RolloutResult[]): ReportStats {
  const byRow = new Map<number, RolloutResult[]>();
  for (const r of results) byRow.set(r.row, [...(byRow.get(r.row) ?? []), r]);
  const rows = [...byRow.entries()].sort(([a], [b]) => a - b).map(([row, rs]) => rowStats(row, rs));

  const comparable = rows.filter((r) => r.scores.length >= 2);
  const graded = results.filter((r) => r.score !== null);
  const toolCallHistogram = new Map<number, number>();
  for (const r of results) toolCallHistogram.set(r.tool_calls, (toolCallHistogram.get(r.tool_calls) ?? 0) + 1);
  const budgetKnown = results.filter((r) => r.budget_exhausted !== null);

  // The curve stops at the fewest graded tries of any row, so every k averages the same rows and
  // a discarded try cannot make it dip.
  const gradedRows = rows.filter((r) => r.scores.length > 0);
  const maxK = gradedRows.length ? Math.min(...gradedRows.map((r) => r.scores.length)) : 0;
  const bestOfK: BestOfK[] = [];
  for (let k = 1; k <= maxK; k++) {
    bestOfK.push({ k, rows: gradedRows.length, expectedBest: mean(gradedRows.map((r) => expectedBestOfK(r.scores, k)))! });
  }

  return {
    rollouts: results.length,
    graded: graded.length,
    discarded: results.filter((r) => r.discarded).length,
    rows,
    meanScore: mean(graded.map((r) => r.score as number)),
    noSignalRows: comparable.filter((r) => (r.spread ?? 0) < EPS).length,
    comparableRows: comparable.length,
    toolCalls: distribution(results.map((r) => r.tool_calls)),
    toolCallHistogram: new Map([...toolCallHistogram.entries()].sort(([a], [b]) => a - b)),
    latencyMs: distribution(results.map((r) => r.latency_ms)),
    budgetExhaustedRate: budgetKnown.length ? budgetKnown.filter((r) => r.budget_exhausted).length / budgetKnown.length : null,
    maxStepsRate: results.length ? results.filter((r) => r.max_steps_reached).length / results.length : 0,
    bestOfK,
  };
}
