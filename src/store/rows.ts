// The tables' rows as the SQL drivers return them, shared by the SQLite and Postgres stores. `B` is
// how a driver returns booleans (SQLite: 0/1, Postgres: true/false).
import type { BudgetUsage, CallStatus, GradeRecord, RecordedCall, RolloutSummary } from './records.js';
import type { DoorSessionRecord, GradeWithSample, NewGrade } from './types.js';

/** The door of a rollout no door opened (Agent RFT's /tools and /grade, /mcp): the column's default. */
export const DEFAULT_DOOR = 'agent-rft';

export interface CallRowShape<B> {
  trace_id: string;
  call_id: string;
  seq: number;
  tool: string;
  arguments: string;
  args_hash: string;
  output: string | null;
  status: string;
  cost: number;
  credential: string | null;
  started_at: number;
  finished_at: number | null;
  duration_ms: number | null;
  output_bytes: number | null;
  truncated: B;
  /** Absent from rows of data dirs made before the column (until their migration) and from older JSON. */
  sandbox?: string | null;
}

export interface RolloutRowShape<B> {
  trace_id: string;
  created_at: number;
  updated_at: number;
  item: string | null;
  budget_limit: number;
  budget_used: number;
  budget_exceeded: B;
  next_seq: number;
  last_score: number | null;
  calls?: number;
  /** The door it came through (absent in rows read before the column existed: Agent RFT's). */
  door?: string | null;
  /** Its run label (null: none; absent in rows read before the column existed). */
  run?: string | null;
  /** Only in lists (summaryExtrasSql). */
  last_grader?: string | null;
  last_grader_version?: string | null;
  flag_kinds?: string | null;
}

export interface GradeRow {
  id: number;
  trace_id: string;
  grader: string;
  grader_version: string;
  sample_hash: string;
  sample: string;
  status: string;
  score: number | null;
  subscores: string | null;
  explanation: string | null;
  error: string | null;
  credential: string | null;
  source: string;
  created_at: number;
  duration_ms: number;
}

/** How a driver's values become the store's: text as stored (Postgres NUL-encodes), booleans. */
export interface RowCodec<B> {
  text: (s: string) => string;
  bool: (b: B) => boolean;
}

const nullable = (text: (s: string) => string) => (s: string | null) => (s === null ? null : text(s));

/** Row-to-record mappers for one driver; both stores map the same columns the same way. */
export function rowMappers<B>({ text, bool }: RowCodec<B>) {
  const opt = nullable(text);
  return {
    toCall: (r: CallRowShape<B>): RecordedCall => ({
      traceId: text(r.trace_id),
      callId: text(r.call_id),
      seq: r.seq,
      tool: r.tool,
      arguments: text(r.arguments),
      argsHash: r.args_hash,
      output: opt(r.output),
      status: r.status as CallStatus,
      cost: r.cost,
      credential: opt(r.credential),
      startedAt: r.started_at,
      finishedAt: r.finished_at,
      durationMs: r.duration_ms,
      outputBytes: r.output_bytes,
      truncated: bool(r.truncated),
      sandbox: opt(r.sandbox ?? null),
    }),
    toGrade: (r: GradeRow): GradeWithSample => ({
      id: r.id,
      traceId: text(r.trace_id),
      grader: r.grader,
      graderVersion: r.grader_version,
      sampleHash: r.sample_hash,
      sample: JSON.parse(r.sample) as unknown,
      status: r.status as GradeRecord['status'],
      score: r.score,
      subscores: r.subscores ? (JSON.parse(r.subscores) as Record<string, number>) : null,
      explanation: opt(r.explanation),
      error: opt(r.error),
      credential: opt(r.credential),
      source: r.source,
      createdAt: r.created_at,
      durationMs: r.duration_ms,
    }),
    toSummary: (r: RolloutRowShape<B>): RolloutSummary => ({
      traceId: text(r.trace_id),
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      budgetLimit: r.budget_limit,
      budgetUsed: r.budget_used,
      budgetExceeded: bool(r.budget_exceeded),
      calls: Number(r.calls ?? 0),
      ...(r.door && r.door !== DEFAULT_DOOR ? { door: r.door } : {}),
      ...(r.run ? { run: r.run } : {}),
      lastScore: r.last_score,
      lastGrader: r.last_grader ?? null,
      lastGraderVersion: r.last_grader_version ?? null,
      flags: r.flag_kinds ? [...new Set(r.flag_kinds.split(','))].sort() : [],
    }),
    budgetOf: (r: Pick<RolloutRowShape<B>, 'budget_used' | 'budget_limit' | 'budget_exceeded'>): BudgetUsage => ({
      used: r.budget_used,
      limit: r.budget_limit,
      exceeded: bool(r.budget_exceeded),
    }),
  };
}

export const GRADE_COLUMNS =
  'trace_id, grader, grader_version, sample_hash, sample, status, score, subscores, explanation, error, credential, source, created_at, duration_ms';

/** The grades table and its lookup index, in both stores' types (`id`: the auto-numbered key). */
export function gradesDdl(table: string, t: { id: string; key: string; text: string; real: string; int: string }): string {
  const text = ['grader', 'grader_version', 'sample_hash', 'sample', 'status'].map((c) => `${c} ${t.text} NOT NULL`);
  const optional = ['subscores', 'explanation', 'error', 'credential'].map((c) => `${c} ${t.text}`);
  return `CREATE TABLE IF NOT EXISTS ${table} (
  id ${t.id}, trace_id ${t.key} NOT NULL, ${text.join(', ')}, score ${t.real}, ${optional.join(', ')},
  source ${t.text} NOT NULL, created_at ${t.int} NOT NULL, duration_ms ${t.real} NOT NULL
);
CREATE INDEX IF NOT EXISTS grades_lookup ON ${table} (trace_id, grader, grader_version, sample_hash);`;
}

/** A grade's values in GRADE_COLUMNS order; `text` encodes free text for the driver. */
export function gradeValues(g: NewGrade, text: (s: string) => string = (s) => s): unknown[] {
  const opt = nullable(text);
  return [
    text(g.traceId), g.grader, g.graderVersion, g.sampleHash, JSON.stringify(g.sample ?? null), g.status, g.score,
    g.subscores ? JSON.stringify(g.subscores) : null, opt(g.explanation), opt(g.error), opt(g.credential), g.source, g.createdAt, g.durationMs,
  ];
}

/** A door_sessions row (SQLite's ended is 0/1, Postgres's a boolean; item only where the read joins the rollout). */
export interface DoorSessionRow {
  door: string;
  id: string;
  trace_id: string;
  environment: string | null;
  tools: string;
  run: string | null;
  state: string;
  version: number;
  ended: number | boolean;
  created_at: number;
  last_used: number;
  item?: string | null;
}

export function toDoorSession(r: DoorSessionRow, text: (s: string) => string = (s) => s): DoorSessionRecord {
  return {
    door: r.door,
    id: text(r.id),
    traceId: text(r.trace_id),
    environment: r.environment,
    tools: JSON.parse(r.tools) as string[],
    run: r.run,
    state: text(r.state),
    version: r.version,
    ended: r.ended === true || r.ended === 1,
    createdAt: r.created_at,
    lastUsed: r.last_used,
  };
}
