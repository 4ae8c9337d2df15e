// Rows as Postgres returns them (int8 already parsed to number, booleans as booleans, free text
// NUL-encoded by pg-text.ts) and their mapping to the store's records.
import type { BudgetUsage, CallStatus, GradeRecord, RecordedCall, RolloutSummary } from '../rollouts/types.js';
import { decodeNullable, decodeText } from './pg-text.js';
import type { GradeWithSample } from './types.js';
import type { CallRowShape, GradeRow, RolloutRowShape } from './rows.js';

export interface PgCallRow extends CallRowShape<boolean> {
  owner: string | null;
}
export type PgRolloutRow = RolloutRowShape<boolean>;
export type PgGradeRow = GradeRow;

export const toCall = (r: PgCallRow): RecordedCall => ({
  traceId: decodeText(r.trace_id),
  callId: decodeText(r.call_id),
  seq: r.seq,
  tool: r.tool,
  arguments: decodeText(r.arguments),
  argsHash: r.args_hash,
  output: decodeNullable(r.output),
  status: r.status as CallStatus,
  cost: r.cost,
  credential: decodeNullable(r.credential),
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  durationMs: r.duration_ms,
  outputBytes: r.output_bytes,
  truncated: r.truncated,
});

export const toGrade = (r: PgGradeRow): GradeWithSample => ({
  id: r.id,
  traceId: decodeText(r.trace_id),
  grader: r.grader,
  graderVersion: r.grader_version,
  sampleHash: r.sample_hash,
  sample: JSON.parse(r.sample) as unknown,
  status: r.status as GradeRecord['status'],
  score: r.score,
  subscores: r.subscores ? (JSON.parse(r.subscores) as Record<string, number>) : null,
  explanation: decodeNullable(r.explanation),
  error: decodeNullable(r.error),
  credential: decodeNullable(r.credential),
  source: r.source,
  createdAt: r.created_at,
  durationMs: r.duration_ms,
});

export const toSummary = (r: PgRolloutRow): RolloutSummary => ({
  traceId: decodeText(r.trace_id),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  budgetLimit: r.budget_limit,
  budgetUsed: r.budget_used,
  budgetExceeded: r.budget_exceeded,
  calls: r.calls ?? 0,
  lastScore: r.last_score,
});

export const budgetOf = (r: Pick<PgRolloutRow, 'budget_used' | 'budget_limit' | 'budget_exceeded'>): BudgetUsage => ({
  used: r.budget_used,
  limit: r.budget_limit,
  exceeded: r.budget_exceeded,
});
