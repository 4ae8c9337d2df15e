// The tables' rows as the SQL drivers return them, shared by the SQLite and Postgres stores. `B` is
// how a driver returns booleans (SQLite: 0/1, Postgres: true/false).

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
