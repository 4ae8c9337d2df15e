// Records kept per rollout (trace_id). These shapes are what the Store persists and what tools and
// graders see through their context (RecordedCall, CallStatus, BudgetUsage: documented field by field in
// docs/units.md, which test/registry/units-doc.test.ts keeps complete).

export type CallStatus =
  | 'running' // started, not finished (a crash leaves it here until boot marks it interrupted)
  | 'ok' // the handler returned
  | 'tool_error' // the handler threw; the message went to the model
  | 'invalid_arguments' // bad JSON or schema violation; the handler did not run
  | 'timeout' // the handler exceeded its timeout
  | 'budget_exceeded' // the budget was spent; the handler did not run, nothing was charged
  | 'interrupted'; // the server stopped while it ran; it never runs again

export interface RecordedCall {
  traceId: string;
  callId: string;
  /** Order of arrival within the rollout, from 1. */
  seq: number;
  /** The tool's name (the field is `tool`: a call has no `name`). */
  tool: string;
  /** Canonical JSON of the parsed arguments (or the raw string when it was not JSON). */
  arguments: string;
  argsHash: string;
  output: string | null;
  status: CallStatus;
  cost: number;
  credential: string | null;
  startedAt: number;
  finishedAt: number | null;
  durationMs: number | null;
  outputBytes: number | null;
  truncated: boolean;
  /**
   * Id of the sandbox the call got from ctx.sandbox() (a new one per creation, kept by the driver where
   * no command reaches it), null when it used none: tells the workspace a grader gets from the one the
   * rollout worked in (graders/unit_tests.ts).
   */
  sandbox: string | null;
}

export interface BudgetUsage {
  used: number;
  limit: number;
  exceeded: boolean;
}

export interface RolloutSummary {
  traceId: string;
  createdAt: number;
  updatedAt: number;
  budgetLimit: number;
  budgetUsed: number;
  budgetExceeded: boolean;
  calls: number;
  /** The door that opened the rollout ('nemo-gym', src/doors); absent for Agent RFT's (/tools, /grade, /mcp). */
  door?: string;
  /** The run it was labelled with (x-rft-run, src/protocol/run-label.ts); absent when none. */
  run?: string;
  lastScore: number | null;
  /** Grader and version of the last successful grade (lists only; null elsewhere). */
  lastGrader: string | null;
  lastGraderVersion: string | null;
  /** Kinds of the rollout's integrity flags. */
  flags: string[];
}

/** A rollout's integrity flag of one kind: how many events, and the first one's call and detail. */
export interface IntegrityFlag {
  kind: string;
  events: number;
  callId: string | null;
  detail: string;
  firstAt: number;
  lastAt: number;
}

export interface GradeRecord {
  id: number;
  traceId: string;
  grader: string;
  graderVersion: string;
  sampleHash: string;
  status: 'ok' | 'error';
  score: number | null;
  subscores: Record<string, number> | null;
  explanation: string | null;
  error: string | null;
  credential: string | null;
  /** 'endpoint' (trainer call), 'regrade', 'check' ... */
  source: string;
  createdAt: number;
  durationMs: number;
}

export interface RolloutRecord extends RolloutSummary {
  item: Record<string, unknown> | null;
  callsList: RecordedCall[];
  grades: GradeRecord[];
  integrityFlags: IntegrityFlag[];
}
