// GET /v1/stats: the dashboard's figures for a time window, from the store (so one dashboard covers
// every replica on Postgres), shaped as series over aligned buckets. The store returns grouped rows
// (src/stats/insights.ts); this turns them into rates, means and latency percentiles.
import { LATENCY_EDGES_MS, type StatsRows } from './insights.js';
import { OUTCOME_FAILURE, outcomeOf, TOOL_OUTCOMES, type ToolOutcome } from '../metrics/outcomes.js';
import type { CallStatus } from '../store/records.js';
import { INTEGRITY_DETECTION } from '../integrity/flags.js';
import type { PoolReply } from './pool.js';

/** Bucket sizes a window is cut into, smallest first; the default keeps at most TARGET_BUCKETS. */
const BUCKET_STEPS_MS = [10_000, 30_000, 60_000, 5 * 60_000, 15 * 60_000, 60 * 60_000, 6 * 60 * 60_000, 24 * 60 * 60_000];
const TARGET_BUCKETS = 120;
export const MAX_BUCKETS = 2000;

export function defaultBucketMs(spanMs: number): number {
  return BUCKET_STEPS_MS.find((b) => spanMs / b <= TARGET_BUCKETS) ?? BUCKET_STEPS_MS[BUCKET_STEPS_MS.length - 1]!;
}

/** The value below which a fraction p of a histogram's observations fall, interpolated in its bucket. */
export function quantile(counts: readonly number[], edges: readonly number[], p: number): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = p * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const n = counts[i]!;
    if (n > 0 && seen + n >= rank) {
      // Above the last edge there is no upper bound: answer the last edge (as Prometheus does).
      if (i >= edges.length) return edges[edges.length - 1]!;
      const lo = i === 0 ? 0 : edges[i - 1]!;
      return lo + ((edges[i]! - lo) * (rank - seen)) / n;
    }
    seen += n;
  }
  return edges[edges.length - 1]!;
}

export interface LocalView {
  sandboxes: { driver: string; live: number; queued: number; cap: number; pool: PoolReply } | null;
  /** This replica's failures since it started, from its metrics (5xx never reach the record). */
  failures: { kind: string; where: string; count: number }[] | null;
}

const round = (x: number, digits = 4) => Math.round(x * 10 ** digits) / 10 ** digits;

export function buildStats(rows: StatsRows, q: { since: number; until: number; bucketMs: number; include?: string[] }, local: LocalView) {
  const first = Math.floor(q.since / q.bucketMs) * q.bucketMs;
  const buckets: number[] = [];
  for (let t = first; t < q.until; t += q.bucketMs) buckets.push(t);
  const index = new Map(buckets.map((t, i) => [t, i]));
  const series = () => buckets.map(() => 0);
  const at = (t: number | string) => index.get(Number(t));

  // tool calls: per bucket by outcome, and per tool over the window
  const byOutcome = Object.fromEntries(TOOL_OUTCOMES.filter((o) => o !== 'replayed').map((o) => [o, series()])) as Record<
    Exclude<ToolOutcome, 'replayed'>,
    number[]
  >;
  const failures = { model: series(), infra: series(), data: series() };
  const tools = new Map<string, { calls: number; byOutcome: Record<string, number>; latency: number[] }>();
  for (const r of rows.calls) {
    const n = Number(r.n);
    if (r.status === 'running') continue;
    const outcome = outcomeOf(r.status as Exclude<CallStatus, 'running'>, false) as Exclude<ToolOutcome, 'replayed'>;
    const i = at(r.t);
    if (i !== undefined) {
      byOutcome[outcome][i]! += n;
      const f = OUTCOME_FAILURE[outcome];
      if (f) failures[f.kind][i]! += n;
    }
    let tool = tools.get(r.tool);
    if (!tool) tools.set(r.tool, (tool = { calls: 0, byOutcome: {}, latency: new Array<number>(LATENCY_EDGES_MS.length + 1).fill(0) }));
    tool.calls += n;
    tool.byOutcome[outcome] = (tool.byOutcome[outcome] ?? 0) + n;
    const le = Number(r.le);
    if (le >= 0) tool.latency[le]! += n;
  }

  const started = series();
  for (const r of rows.rolloutsStarted) {
    const i = at(r.t);
    if (i !== undefined) started[i] = Number(r.n);
  }

  // learning curve: per grader and grader version
  const graded = series();
  const curves = new Map<string, ReturnType<typeof newCurve>>();
  const newCurve = (grader: string, version: string) => ({
    grader,
    grader_version: version,
    graded: series(),
    errors: series(),
    mean_score: buckets.map(() => null as number | null),
    tool_calls_per_rollout: buckets.map(() => null as number | null),
    budget_exhaustion_rate: buckets.map(() => null as number | null),
    no_tool_call_rate: buckets.map(() => null as number | null),
  });
  for (const r of rows.grades) {
    const i = at(r.t);
    if (i === undefined) continue;
    const key = `${r.grader}\0${r.grader_version}`;
    let c = curves.get(key);
    if (!c) curves.set(key, (c = newCurve(r.grader, r.grader_version)));
    const n = Number(r.graded);
    c.graded[i] = n;
    c.errors[i] = Number(r.errors);
    graded[i]! += n;
    if (n > 0) {
      c.mean_score[i] = round(Number(r.score_sum) / n);
      c.tool_calls_per_rollout[i] = round(Number(r.tool_calls) / n, 2);
      c.budget_exhaustion_rate[i] = round(Number(r.budget_exhausted) / n);
      c.no_tool_call_rate[i] = round(Number(r.no_tool_calls) / n);
    }
    // A refused bad row is the dataset's failure, not ours.
    failures.infra[i]! += Number(r.errors) - Number(r.bad_rows);
    failures.data[i]! += Number(r.bad_rows);
  }

  const perMinute = (total: number) => round((total * 60_000) / Math.max(1, q.until - q.since), 2);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  return {
    since: new Date(q.since).toISOString(),
    until: new Date(q.until).toISOString(),
    bucket_ms: q.bucketMs,
    include: (q.include ?? ['calls', 'rollouts', 'grades', 'integrity']) as ('calls' | 'rollouts' | 'grades' | 'integrity')[],
    buckets: buckets.map((t) => new Date(t).toISOString()),
    totals: {
      rollouts_started: sum(started),
      rollouts_graded: sum(graded),
      rollouts_started_per_minute: perMinute(sum(started)),
      rollouts_graded_per_minute: perMinute(sum(graded)),
      tool_calls: sum(Object.values(byOutcome).map(sum)),
      tool_calls_per_minute: perMinute(sum(Object.values(byOutcome).map(sum))),
      failures: { model: sum(failures.model), infra: sum(failures.infra), data: sum(failures.data) },
    },
    rollouts_started: started,
    rollouts_graded: graded,
    tool_calls: byOutcome,
    failures,
    tools: [...tools]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([tool, t]) => ({
        tool,
        calls: t.calls,
        by_outcome: t.byOutcome,
        error_rate: round((t.calls - (t.byOutcome.ok ?? 0)) / t.calls),
        p50_ms: nullableRound(quantile(t.latency, LATENCY_EDGES_MS, 0.5)),
        p99_ms: nullableRound(quantile(t.latency, LATENCY_EDGES_MS, 0.99)),
      })),
    learning_curve: [...curves.values()].sort((a, b) => (a.grader + a.grader_version < b.grader + b.grader_version ? -1 : 1)),
    integrity: rows.flags
      .map((f) => ({ grader: f.grader, grader_version: f.grader_version, kind: f.kind, rollouts: Number(f.rollouts), events: Number(f.events) }))
      .sort((a, b) => `${a.grader}${a.grader_version}${a.kind}`.localeCompare(`${b.grader}${b.grader_version}${b.kind}`)),
    integrity_kinds: INTEGRITY_DETECTION,
    this_replica: local,
  };
}

const nullableRound = (x: number | null) => (x === null ? null : round(x, 2));

export type StatsReply = ReturnType<typeof buildStats>;
