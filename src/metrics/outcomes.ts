// Whose fault a failure is. The trainer's users need to tell the model's mistakes (training data:
// the model reads them and learns) from the infrastructure's (a run collapses on them: zeros or
// discarded rollouts). One table decides it, for the metrics, the stats endpoint and the README.
import type { CallStatus } from '../store/records.js';

/** `rft_tool_calls_total{outcome}`: a recorded call's status, or `replayed` for a retry's reply. */
export const TOOL_OUTCOMES = ['ok', 'tool_error', 'invalid_arguments', 'timeout', 'budget_exhausted', 'interrupted', 'replayed'] as const;
export type ToolOutcome = (typeof TOOL_OUTCOMES)[number];

/** `data`: the dataset's (a row the grader cannot read): neither trained on nor a failure of ours. */
export type FailureKind = 'infra' | 'model' | 'data';
/** `rft_failures_total{kind, where}`. */
export interface Failure {
  kind: FailureKind;
  where: string;
}

/** A tool call's failure is the model's or ours; only a grade can be the dataset's. */
type CallFailure = Failure & { kind: 'model' | 'infra' };
const model = (where: string): CallFailure => ({ kind: 'model', where });
const infra = (where: string): CallFailure => ({ kind: 'infra', where });

/**
 * Each outcome's failure class. A `tool_error` is the tool refusing its input (the model's), unless
 * the tool threw a 5xx-coded error (a sandbox or store failure inside the tool): see failureOfToolError.
 */
export const OUTCOME_FAILURE: Readonly<Record<ToolOutcome, CallFailure | null>> = {
  ok: null,
  // the tool refused the input ("no such document", a patch that does not apply, a path outside the workspace)
  tool_error: model('tool'),
  // arguments that are not JSON or break the tool's schema: the handler never ran
  invalid_arguments: model('arguments'),
  // the handler outlived its timeout: a hung tool or a slow dependency, not something the model asked for
  timeout: infra('tool'),
  // the rollout's budget was spent: the tool did not run
  budget_exhausted: model('budget'),
  // a server restart interrupted the call (the reply is its record; it never runs again)
  interrupted: infra('restart'),
  replayed: null,
};

export function outcomeOf(status: Exclude<CallStatus, 'running'>, replayed: boolean): ToolOutcome {
  if (status === 'interrupted') return 'interrupted';
  if (replayed) return 'replayed';
  return status === 'budget_exceeded' ? 'budget_exhausted' : status;
}

/** Where a coded server error comes from, by its code's family. */
export function whereOfCode(code: string | undefined): string {
  if (!code) return 'server';
  if (code.startsWith('RFT_ERR_STORE')) return 'store';
  if (code.startsWith('RFT_ERR_SANDBOX')) return 'sandbox';
  if (code.startsWith('RFT_ERR_GRADER') || code === 'RFT_ERR_MODEL_GRADER' || code === 'RFT_ERR_GRADING_ARGUMENT') return 'grader';
  return 'server';
}

/** A tool handler's throw: a 5xx-coded error is ours (sandbox, store, corpus), anything else the model's. */
export function failureOfToolError(e: unknown): Failure {
  const err = e as { code?: unknown; statusCode?: unknown };
  if (typeof err?.statusCode === 'number' && err.statusCode >= 500) {
    const where = whereOfCode(typeof err.code === 'string' ? err.code : undefined);
    return infra(where === 'server' ? 'tool' : where);
  }
  return model('tool');
}

/** The dataset row's failures: refused at the start (unreadable, too deep) or at the grade (bad row). */
const ROW_CODES = new Set(['RFT_ERR_BAD_ROW', 'RFT_ERR_ROW_UNREADABLE', 'RFT_ERR_ROW_TOO_DEEP']);

/** A reply with this status is a failure of ours (every 5xx is retried, then the rollout is dropped). */
export function failureOfHttp(status: number, code: string | undefined): Failure | null {
  if (code !== undefined && ROW_CODES.has(code)) return { kind: 'data', where: 'row' };
  return status >= 500 ? infra(whereOfCode(code)) : null;
}

/**
 * Errors already counted in rft_failures_total where they happened (a tool call un-begun by the
 * ledger, whichever route or waiter answers it), so the HTTP reply does not count them again.
 */
const counted = new WeakSet<object>();

export function markFailureCounted(e: object): void {
  counted.add(e);
}

export function isFailureCounted(e: unknown): boolean {
  return typeof e === 'object' && e !== null && counted.has(e);
}
