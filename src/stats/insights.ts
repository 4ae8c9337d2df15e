// What the dashboard and GET /v1/stats read from the record, as SQL both stores run (SQLite and
// Postgres differ only in placeholders, table names and string aggregation: see Dialect). Every
// query is bounded by an index: calls by started_at, rollouts by created_at, grades by a covering
// index on created_at (the learning curve reads no grade row), flags by created_at, and per rollout
// by the tables' trace_id keys. The calls index holds started_at only: one that covered the window
// query (tool, status, duration) made it 6x faster but cost every call a second index write at its
// finish (measured: +10-25% store CPU per call), and the tool path comes first.
import type { CallStatus, IntegrityFlag } from '../store/records.js';

/** Handler-time bucket edges (ms) of the latency histogram; p50/p99 per tool interpolate in them. */
export const LATENCY_EDGES_MS = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000];

export interface StatsQuery {
  since: number;
  until: number;
  bucketMs: number;
  /** The figures to compute (default all): a learning curve over days needs no scan of every call. */
  parts?: readonly StatsPart[] | undefined;
  /** Only rollouts of this run label (and their calls, grades and flags). */
  run?: string | undefined;
}

export type StatsPart = keyof StatsRows;
export const STATS_PARTS: readonly StatsPart[] = ['calls', 'rolloutsStarted', 'grades', 'flags'];

/** Calls started in a bucket, by tool, status and latency bucket (index in LATENCY_EDGES_MS; its length = above the last; -1 = no handler time). */
export interface CallBucketRow {
  t: number;
  tool: string;
  status: string;
  le: number;
  n: number;
}

export interface GradeBucketRow {
  t: number;
  grader: string;
  grader_version: string;
  graded: number;
  errors: number;
  /** Of the errors, grades refused for a row that does not match the grader's itemSchema (the dataset's). */
  bad_rows: number;
  score_sum: number | null;
  tool_calls: number | null;
  budget_exhausted: number;
  no_tool_calls: number;
}

export interface FlagCountRow {
  grader: string | null;
  grader_version: string | null;
  kind: string;
  rollouts: number;
  events: number;
}

export interface StatsRows {
  calls: CallBucketRow[];
  rolloutsStarted: { t: number; n: number }[];
  grades: GradeBucketRow[];
  flags: FlagCountRow[];
}

export interface NewFlag {
  traceId: string;
  kind: string;
  callId: string | null;
  detail: string;
  at: number;
}

/** Filters of the rollout list (each narrows it; all are optional). */
export interface ListRolloutsQuery {
  limit: number;
  cursor?: string | undefined;
  /** Only rollouts updated at or after this time (ms since epoch). */
  since?: number | undefined;
  filter?: RolloutFilter | undefined;
}

/**
 * A page cursor of listRollouts: base64url of "<created_at>|<trace_id>" of the page's last row, the
 * same for both stores. A cursor neither issued decodes to undefined (an empty page).
 */
export function encodeCursor(createdAt: number, traceId: string): string {
  return Buffer.from(`${createdAt}|${traceId}`).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: number; traceId: string } | undefined {
  const text = Buffer.from(cursor, 'base64url').toString();
  const bar = text.indexOf('|');
  const createdAt = Number(text.slice(0, bar));
  return bar > 0 && Number.isSafeInteger(createdAt) ? { createdAt, traceId: text.slice(bar + 1) } : undefined;
}

export interface RolloutFilter {
  minScore?: number | undefined;
  maxScore?: number | undefined;
  /** Rollouts with at least one call of this tool. */
  tool?: string | undefined;
  /** Rollouts with at least one call of this status. */
  status?: Exclude<CallStatus, 'running'> | undefined;
  /** Rollouts graded by this grader. */
  grader?: string | undefined;
  /** Rollouts with an integrity flag: of this kind, or of any kind ('any'). */
  flag?: string | undefined;
  /** Rollouts that came through this door ('agent-rft', 'nemo-gym'). */
  door?: string | undefined;
  /** Rollouts labelled with this run. */
  run?: string | undefined;
}

export interface Dialect {
  t: { rollouts: string; calls: string; grades: string; flags: string };
  /** The i-th placeholder (1-based). */
  param(i: number): string;
  /** Comma-joined strings of a group. */
  joinText(expr: string): string;
}

export const sqliteDialect: Dialect = {
  t: { rollouts: 'rollouts', calls: 'calls', grades: 'grades', flags: 'integrity_flags' },
  // Numbered (?1, ?2 ...): a value can appear twice; bind them as {1: v1, 2: v2} (sqliteParams).
  param: (i) => `?${i}`,
  joinText: (e) => `group_concat(${e}, ',')`,
};

/** better-sqlite3 binds numbered placeholders from an object keyed by number. */
export function sqliteParams(params: unknown[]): Record<number, unknown> {
  const o: Record<number, unknown> = {};
  params.forEach((v, i) => (o[i + 1] = v));
  return o;
}

export function postgresDialect(schema: string): Dialect {
  return {
    t: { rollouts: `${schema}.rollouts`, calls: `${schema}.calls`, grades: `${schema}.grades`, flags: `${schema}.integrity_flags` },
    param: (i) => `$${i}`,
    joinText: (e) => `string_agg(${e}, ',')`,
  };
}

/** Tables and indexes the insights need, for `CREATE ... IF NOT EXISTS` at boot (both stores). */
export function insightsDdl(d: Dialect, types: { key: string; text: string; int: string }): string {
  const { t } = d;
  return `
CREATE INDEX IF NOT EXISTS calls_started ON ${t.calls} (started_at);
DROP INDEX IF EXISTS ${t.grades.replace(/grades$/, 'grades_created')};
CREATE INDEX IF NOT EXISTS grades_window ON ${t.grades} (created_at, source, status, grader, grader_version, score, trace_id);
CREATE TABLE IF NOT EXISTS ${t.flags} (
  trace_id ${types.key} NOT NULL,
  kind ${types.text} NOT NULL,
  events ${types.int} NOT NULL,
  call_id ${types.text},
  detail ${types.text} NOT NULL,
  created_at ${types.int} NOT NULL,
  updated_at ${types.int} NOT NULL,
  PRIMARY KEY (trace_id, kind)
);
CREATE INDEX IF NOT EXISTS integrity_flags_created ON ${t.flags} (created_at);
`;
}

export interface Sql {
  text: string;
  params: unknown[];
}

/**
 * A flag's insert, its row from `source` (a VALUES list or a SELECT of trace_id, kind, events, call_id,
 * detail, created_at, updated_at): a kind already flagged on the rollout counts one more event.
 */
export function flagUpsert(d: Dialect, source: string): string {
  return `INSERT INTO ${d.t.flags} AS f (trace_id, kind, events, call_id, detail, created_at, updated_at) ${source}
           ON CONFLICT (trace_id, kind) DO UPDATE SET events = f.events + 1, updated_at = excluded.updated_at`;
}

/** A flag: inserted, or counted on the rollout's flag of the same kind (the first occurrence is kept). */
export function upsertFlagSql(d: Dialect, f: NewFlag, traceId: unknown = f.traceId, text: (s: string) => unknown = (s) => s): Sql {
  const p = d.param.bind(d);
  return {
    text: flagUpsert(d, `VALUES (${p(1)}, ${p(2)}, 1, ${p(3)}, ${p(4)}, ${p(5)}, ${p(5)})`),
    params: [traceId, f.kind, f.callId === null ? null : text(f.callId), text(f.detail), f.at],
  };
}

export function flagsOfSql(d: Dialect, traceId: unknown): Sql {
  return {
    text: `SELECT kind, events, call_id, detail, created_at, updated_at FROM ${d.t.flags} WHERE trace_id = ${d.param(1)} ORDER BY created_at, kind`,
    params: [traceId],
  };
}

export interface FlagRow {
  kind: string;
  events: number;
  call_id: string | null;
  detail: string;
  created_at: number;
  updated_at: number;
}

export function toFlag(r: FlagRow, text: (s: string) => string = (s) => s): IntegrityFlag {
  return {
    kind: r.kind,
    events: Number(r.events),
    callId: r.call_id === null ? null : text(r.call_id),
    detail: text(r.detail),
    firstAt: Number(r.created_at),
    lastAt: Number(r.updated_at),
  };
}

/** The statements of one stats reply: each scans one index range of the window. */
export function statsSql(d: Dialect, q: StatsQuery): { calls: Sql; rolloutsStarted: Sql; grades: Sql; flags: Sql } {
  const { t } = d;
  const p = d.param.bind(d);
  const window = [q.bucketMs, q.since, q.until, q.run ?? null];
  // The run filter is in the text whether or not a run is asked for (SQLite prepares these once):
  // without one, its first test is true. CAST: Postgres must know the parameter's type.
  const ofRun = (trace: string, run: string) =>
    `(CAST(${run} AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM ${t.rollouts} rr WHERE rr.trace_id = ${trace} AND rr.run = ${run}))`;
  // x - x % b, not (x / b) * b: better-sqlite3 binds a number as REAL, and % works on integers in both stores.
  const bucket = (col: string) => `(${col} - ${col} % ${p(1)})`;
  // status values whose duration is not a handler's time
  const noHandler = `status IN ('running', 'budget_exceeded', 'interrupted') OR duration_ms IS NULL`;
  const le = `CASE WHEN ${noHandler} THEN -1 ${LATENCY_EDGES_MS.map((e, i) => `WHEN duration_ms <= ${e} THEN ${i}`).join(' ')} ELSE ${LATENCY_EDGES_MS.length} END`;
  return {
    calls: {
      text: `SELECT ${bucket('started_at')} AS t, tool, status, ${le} AS le, count(*) AS n
             FROM ${t.calls} c WHERE started_at >= ${p(2)} AND started_at < ${p(3)} AND ${ofRun('c.trace_id', p(4))} GROUP BY 1, 2, 3, 4`,
      params: window,
    },
    rolloutsStarted: {
      text: `SELECT ${bucket('created_at')} AS t, count(*) AS n
             FROM ${t.rollouts} WHERE created_at >= ${p(2)} AND created_at < ${p(3)} AND (CAST(${p(4)} AS TEXT) IS NULL OR run = ${p(4)}) GROUP BY 1`,
      params: window,
    },
    // The trainer's grades only (source 'endpoint'): regrades and checks are not the run's curve.
    // Tool calls per rollout: its recorded calls now (calls after its grade are rare); call_count,
    // not next_seq - 1, which counts un-begun attempts (failures of ours) too.
    grades: {
      text: `SELECT ${bucket('g.created_at')} AS t, g.grader, g.grader_version,
               count(*) FILTER (WHERE g.status = 'ok') AS graded,
               count(*) FILTER (WHERE g.status <> 'ok') AS errors,
               count(*) FILTER (WHERE g.status <> 'ok' AND g.error LIKE 'RFT_ERR_BAD_ROW:%') AS bad_rows,
               sum(g.score) FILTER (WHERE g.status = 'ok') AS score_sum,
               sum(r.call_count) FILTER (WHERE g.status = 'ok') AS tool_calls,
               count(*) FILTER (WHERE g.status = 'ok' AND r.budget_exceeded) AS budget_exhausted,
               count(*) FILTER (WHERE g.status = 'ok' AND r.call_count = 0) AS no_tool_calls
             FROM ${t.grades} g JOIN ${t.rollouts} r ON r.trace_id = g.trace_id
             WHERE g.created_at >= ${p(2)} AND g.created_at < ${p(3)} AND g.source = 'endpoint' AND (CAST(${p(4)} AS TEXT) IS NULL OR r.run = ${p(4)})
             GROUP BY 1, 2, 3`,
      params: window,
    },
    // A flagged rollout counts for each grader version that graded it (or for none: not graded yet).
    flags: {
      text: `SELECT g.grader, g.grader_version, f.kind, count(DISTINCT f.trace_id) AS rollouts, sum(f.events) AS events
             FROM ${t.flags} f LEFT JOIN ${t.grades} g ON g.trace_id = f.trace_id AND g.source = 'endpoint' AND g.status = 'ok'
             WHERE f.created_at >= ${p(1)} AND f.created_at < ${p(2)} AND ${ofRun('f.trace_id', p(3))}
             GROUP BY 1, 2, 3`,
      params: [q.since, q.until, q.run ?? null],
    },
  };
}

/**
 * The rollout list's query (both stores): newest first, a page past the cursor (created_at, then
 * trace_id, both descending), one row more than the limit to tell whether a next page exists; null
 * for a cursor that cannot be read. `key` encodes the cursor's trace_id as the store binds text.
 */
export function listRolloutsSql(d: Dialect, q: ListRolloutsQuery, key: (s: string) => unknown = (s) => s): Sql | null {
  const where: string[] = [];
  const params: unknown[] = [];
  const p = (v: unknown) => (params.push(v), d.param(params.length));
  if (q.cursor !== undefined) {
    const at = decodeCursor(q.cursor);
    if (!at) return null;
    const created = p(at.createdAt);
    where.push(`(r.created_at < ${created} OR (r.created_at = ${created} AND r.trace_id < ${p(key(at.traceId))}))`);
  }
  if (q.since !== undefined) where.push(`r.updated_at >= ${p(q.since)}`);
  if (q.filter) {
    const f = rolloutFilterSql(d, q.filter, params.length + 1);
    where.push(...f.where);
    params.push(...f.params);
  }
  const text = `SELECT r.trace_id, r.created_at, r.updated_at, r.budget_limit, r.budget_used, r.budget_exceeded, r.next_seq, r.last_score,
      r.call_count AS calls, r.door, r.run, ${summaryExtrasSql(d)}
    FROM ${d.t.rollouts} r ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
    ORDER BY r.created_at DESC, r.trace_id DESC LIMIT ${p(q.limit + 1)}`;
  return { text, params };
}

/** A page of listRollouts from its query's rows (one more than the limit if a next page exists). */
export function rolloutPage<R extends { created_at: number; trace_id: string }, S>(
  rows: R[],
  limit: number,
  toSummary: (r: R) => S,
  text: (t: string) => string = (t) => t,
): { rollouts: S[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { rollouts: page.map(toSummary), nextCursor: rows.length > limit && last ? encodeCursor(last.created_at, text(last.trace_id)) : null };
}

/**
 * The WHERE conditions of a filtered rollout list (on `r`, the rollouts table), and their params
 * numbered from `first`. Each EXISTS probes one rollout's rows through its trace_id key.
 */
function rolloutFilterSql(d: Dialect, f: RolloutFilter, first: number): { where: string[]; params: unknown[] } {
  const { t } = d;
  const where: string[] = [];
  const params: unknown[] = [];
  const p = (v: unknown) => {
    params.push(v);
    return d.param(first + params.length - 1);
  };
  if (f.minScore !== undefined) where.push(`r.last_score >= ${p(f.minScore)}`);
  if (f.maxScore !== undefined) where.push(`r.last_score <= ${p(f.maxScore)}`);
  if (f.tool !== undefined) where.push(`EXISTS (SELECT 1 FROM ${t.calls} c WHERE c.trace_id = r.trace_id AND c.tool = ${p(f.tool)})`);
  if (f.status !== undefined) where.push(`EXISTS (SELECT 1 FROM ${t.calls} c WHERE c.trace_id = r.trace_id AND c.status = ${p(f.status)})`);
  if (f.door !== undefined) where.push(`r.door = ${p(f.door)}`);
  if (f.run !== undefined) where.push(`r.run = ${p(f.run)}`);
  if (f.grader !== undefined) where.push(`EXISTS (SELECT 1 FROM ${t.grades} g WHERE g.trace_id = r.trace_id AND g.grader = ${p(f.grader)})`);
  // Flags are few: the list is driven from them (their rollouts, then sorted), not from every rollout.
  if (f.flag !== undefined) {
    where.push(
      f.flag === 'any'
        ? `r.trace_id IN (SELECT f.trace_id FROM ${t.flags} f)`
        : `r.trace_id IN (SELECT f.trace_id FROM ${t.flags} f WHERE f.kind = ${p(f.flag)})`,
    );
  }
  return { where, params };
}

/** Per-row extras of the rollout list: the last ok grade's grader and version, and the flags' kinds. */
function summaryExtrasSql(d: Dialect): string {
  const { t } = d;
  const lastOk = (col: string) =>
    `(SELECT g.${col} FROM ${t.grades} g WHERE g.trace_id = r.trace_id AND g.status = 'ok' ORDER BY g.id DESC LIMIT 1) AS last_${col}`;
  return `${lastOk('grader')}, ${lastOk('grader_version')},
    (SELECT ${d.joinText('f.kind')} FROM ${t.flags} f WHERE f.trace_id = r.trace_id) AS flag_kinds`;
}
