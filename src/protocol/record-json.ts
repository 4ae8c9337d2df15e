// The JSON shape of the rollout record (GET /v1/rollouts/:id, export/import lines): snake_case,
// ISO times. rolloutFromJson is its strict inverse for imports.
import { z } from 'zod';
import { errors } from '../errors.js';
import { DEFAULT_DOOR } from '../store/rows.js';
import type { GradeWithSample, ImportedRollout } from '../store/types.js';
import { canonicalJson, sha256 } from './canonical.js';
import { formatZodIssues } from '../ledger/output.js';
import { isRunLabel } from './run-label.js';
import type { IntegrityFlag, RecordedCall, RolloutRecord, RolloutSummary } from '../store/records.js';

function iso(ms: number): string;
function iso(ms: number | null): string | null;
function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export function summaryToJson(r: RolloutSummary) {
  return {
    trace_id: r.traceId,
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
    calls: r.calls,
    door: r.door ?? DEFAULT_DOOR,
    run: r.run ?? null,
    budget: { used: r.budgetUsed, limit: r.budgetLimit, exceeded: r.budgetExceeded },
    last_score: r.lastScore,
    last_grader: r.lastGrader,
    last_grader_version: r.lastGraderVersion,
    integrity_flags: r.flags,
  };
}

export function flagToJson(f: IntegrityFlag) {
  return { kind: f.kind, events: f.events, call_id: f.callId, detail: f.detail, first_at: iso(f.firstAt), last_at: iso(f.lastAt) };
}

export function callToJson(c: RecordedCall) {
  return {
    seq: c.seq,
    call_id: c.callId,
    tool: c.tool,
    arguments: c.arguments,
    output: c.output,
    status: c.status,
    cost: c.cost,
    credential: c.credential,
    started_at: iso(c.startedAt),
    finished_at: iso(c.finishedAt),
    duration_ms: c.durationMs,
    truncated: c.truncated,
    sandbox: c.sandbox,
  };
}

export function gradeToJson(g: GradeWithSample) {
  return {
    id: g.id,
    grader: g.grader,
    grader_version: g.graderVersion,
    sample: g.sample,
    score: g.score,
    subscores: g.subscores,
    explanation: g.explanation,
    status: g.status,
    error: g.error,
    source: g.source,
    created_at: iso(g.createdAt),
    duration_ms: g.durationMs,
  };
}

export function rolloutToJson(r: RolloutRecord & { grades: GradeWithSample[] }) {
  return {
    trace_id: r.traceId,
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
    item: r.item,
    door: r.door ?? DEFAULT_DOOR,
    run: r.run ?? null,
    budget: { used: r.budgetUsed, limit: r.budgetLimit, exceeded: r.budgetExceeded },
    calls: r.callsList.map(callToJson),
    grades: r.grades.map(gradeToJson),
    integrity_flags: r.integrityFlags.map(flagToJson),
  };
}

/** A grade's fields in the record's JSON; `time` is how its time reads (an ISO string, or parsed to ms on import). */
const gradeFields = <T extends z.ZodType>(time: T) => ({
  grader: z.string().min(1),
  grader_version: z.string(),
  sample: z.unknown(),
  score: z.number().nullable(),
  subscores: z.record(z.string(), z.number()).nullable(),
  explanation: z.string().nullable(),
  status: z.enum(['ok', 'error']),
  error: z.string().nullable(),
  source: z.string(),
  created_at: time,
  duration_ms: z.number(),
});

// The replies' shapes, for the routes' schemas and /openapi.json (times are ISO strings).
const at = z.string().describe('ISO time');
const budgetJson = z.object({ used: z.number(), limit: z.number(), exceeded: z.boolean() });

export const summaryJsonSchema = z.object({
  trace_id: z.string(),
  created_at: at,
  updated_at: at,
  calls: z.number(),
  door: z.string().describe("the door the rollout came through: 'agent-rft' (/tools, /grade, /mcp) or 'nemo-gym'"),
  run: z.string().nullable().describe('its run label (x-rft-run), null: none'),
  budget: budgetJson,
  last_score: z.number().nullable(),
  last_grader: z.string().nullable().describe('grader of the last successful grade'),
  last_grader_version: z.string().nullable(),
  integrity_flags: z.array(z.string()).describe('kinds of the rollout\'s integrity flags'),
});

export const rolloutJsonSchema = z.object({
  trace_id: z.string(),
  created_at: at,
  updated_at: at,
  item: z.record(z.string(), z.unknown()).nullable().describe('the dataset row'),
  door: z.string().optional().describe('the door the rollout came through (absent in exports made before doors)'),
  run: z.string().nullable().optional().describe('its run label (x-rft-run), null: none (absent in exports made before run labels)'),
  budget: budgetJson,
  calls: z.array(
    z.object({
      seq: z.number(),
      call_id: z.string(),
      tool: z.string(),
      arguments: z.string().describe('canonical JSON of the arguments (or the raw string when it was not JSON)'),
      output: z.string().nullable(),
      status: z.string().describe('running, ok, tool_error, invalid_arguments, timeout, budget_exceeded, interrupted'),
      cost: z.number(),
      credential: z.string().nullable(),
      started_at: at,
      finished_at: at.nullable(),
      duration_ms: z.number().nullable(),
      truncated: z.boolean(),
      sandbox: z.string().nullable().describe('id of the sandbox the call used (null: none); a grader refuses a workspace that is not this one'),
    }),
  ),
  grades: z.array(
    z.object({ id: z.number(), ...gradeFields(at) }),
  ),
  integrity_flags: z.array(
    z.object({ kind: z.string(), events: z.number(), call_id: z.string().nullable(), detail: z.string(), first_at: at, last_at: at }),
  ),
});

const isoTime = z.iso.datetime({ offset: true }).transform((s) => Date.parse(s));
const status = z.enum(['running', 'ok', 'tool_error', 'invalid_arguments', 'timeout', 'budget_exceeded', 'interrupted']);

const importSchema = z.object({
  trace_id: z.string().min(1).max(200),
  created_at: isoTime,
  updated_at: isoTime,
  item: z.record(z.string(), z.unknown()).nullable(),
  door: z.string().min(1).max(64).optional(),
  run: z.string().refine(isRunLabel, 'not a run label (1 to 64 printable ASCII characters)').nullish(),
  budget: z.object({ used: z.number().int().min(0), limit: z.number().int().min(0), exceeded: z.boolean() }),
  calls: z.array(
    z.object({
      seq: z.number().int().min(1),
      call_id: z.string().min(1),
      tool: z.string().min(1),
      arguments: z.string(),
      output: z.string().nullable(),
      status,
      cost: z.number().int().min(0),
      credential: z.string().nullable(),
      started_at: isoTime,
      finished_at: isoTime.nullable(),
      duration_ms: z.number().nullable(),
      truncated: z.boolean(),
      sandbox: z.string().max(200).nullable().optional(),
    }),
  ),
  grades: z.array(
    z.object(gradeFields(isoTime)),
  ),
});

export function rolloutFromJson(raw: unknown, where: string): ImportedRollout {
  const p = importSchema.safeParse(raw);
  if (!p.success) throw errors.badRequest(`${where}: ${formatZodIssues(p.error.issues)}`);
  const r = p.data;
  return {
    traceId: r.trace_id,
    ...(r.door !== undefined && r.door !== DEFAULT_DOOR ? { door: r.door } : {}),
    ...(r.run ? { run: r.run } : {}),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    item: r.item,
    budget: r.budget,
    calls: r.calls.map((c) => ({
      callId: c.call_id,
      seq: c.seq,
      tool: c.tool,
      arguments: c.arguments,
      argsHash: sha256(c.tool, c.arguments),
      output: c.output,
      // An imported call that was running can never finish here.
      status: c.status === 'running' ? 'interrupted' : c.status,
      cost: c.cost,
      credential: c.credential,
      startedAt: c.started_at,
      finishedAt: c.finished_at,
      durationMs: c.duration_ms,
      outputBytes: c.output === null ? null : Buffer.byteLength(c.output),
      truncated: c.truncated,
      sandbox: c.sandbox ?? null,
    })),
    grades: r.grades.map((g) => ({
      grader: g.grader,
      graderVersion: g.grader_version,
      sampleHash: sha256(canonicalJson(g.sample ?? null)),
      sample: g.sample,
      status: g.status,
      score: g.score,
      subscores: g.subscores,
      explanation: g.explanation,
      error: g.error,
      credential: null,
      source: g.source,
      createdAt: g.created_at,
      durationMs: g.duration_ms,
    })),
  };
}
