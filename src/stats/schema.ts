// The request and reply of GET /v1/stats, as zod: the route validates with them and /openapi.json
// publishes them.
import { z } from 'zod';
import { TOOL_OUTCOMES } from '../metrics/outcomes.js';
import { poolSchema } from './pool.js';

export const statsQuerySchema = z.object({
  since: z.string().max(40).optional().describe('window start: ISO time, ms since epoch, or a duration back from now ("15m", "6h", "7d"); default 1h'),
  until: z.string().max(40).optional().describe('window end, same forms; default now'),
  bucket: z.string().max(20).optional().describe('bucket size: ms, or a number with s, m, h, d; default: at most 120 buckets'),
  include: z
    .string()
    .max(100)
    .regex(/^(calls|rollouts|grades|integrity)(,(calls|rollouts|grades|integrity))*$/, 'a comma-separated list of calls, rollouts, grades, integrity')
    .optional()
    .describe('the figures to compute (default all); calls is the one that scans every call of the window'),
  run: z.string().max(64).optional().describe('only the rollouts of this run label (x-rft-run)'),
});

const series = z.array(z.number()).describe('one value per bucket');
const nullableSeries = z.array(z.number().nullable()).describe('one value per bucket; null where nothing was graded');
const outcomes = TOOL_OUTCOMES.filter((o) => o !== 'replayed');

export const statsReplySchema = z.object({
  since: z.string(),
  until: z.string(),
  bucket_ms: z.number(),
  include: z.array(z.enum(['calls', 'rollouts', 'grades', 'integrity'])),
  buckets: z.array(z.string()).describe('start of each bucket (ISO)'),
  totals: z.object({
    rollouts_started: z.number(),
    rollouts_graded: z.number(),
    rollouts_started_per_minute: z.number(),
    rollouts_graded_per_minute: z.number(),
    tool_calls: z.number(),
    tool_calls_per_minute: z.number(),
    failures: z.object({ model: z.number(), infra: z.number(), data: z.number().describe("grades refused for a row that does not match the grader's itemSchema") }),
  }),
  rollouts_started: series,
  rollouts_graded: series,
  tool_calls: z.object(Object.fromEntries(outcomes.map((o) => [o, series]))).describe('tool calls started per bucket, by outcome'),
  failures: z
    .object({ model: series, infra: series, data: series })
    .describe('recorded failures per bucket: calls by outcome, plus grader errors as infra, except bad rows (RFT_ERR_BAD_ROW) as data'),
  tools: z.array(
    z.object({
      tool: z.string(),
      calls: z.number(),
      by_outcome: z.record(z.string(), z.number()),
      error_rate: z.number().describe('share of calls whose outcome is not ok'),
      p50_ms: z.number().nullable().describe("handler time, interpolated in the store's latency buckets"),
      p99_ms: z.number().nullable(),
    }),
  ),
  learning_curve: z.array(
    z.object({
      grader: z.string(),
      grader_version: z.string(),
      graded: series,
      errors: series,
      mean_score: nullableSeries,
      tool_calls_per_rollout: nullableSeries,
      budget_exhaustion_rate: nullableSeries,
      no_tool_call_rate: nullableSeries,
    }),
  ),
  integrity: z.array(
    z.object({
      grader: z.string().nullable().describe('null: the rollout was not graded (yet)'),
      grader_version: z.string().nullable(),
      kind: z.string(),
      rollouts: z.number(),
      events: z.number(),
    }),
  ),
  integrity_kinds: z.record(z.string(), z.string()).describe('each integrity flag kind and how it is detected'),
  this_replica: z.object({
    sandboxes: z
      .object({ driver: z.string(), live: z.number(), queued: z.number(), cap: z.number(), pool: poolSchema })
      .nullable()
      .describe('null: sandboxes are off (RFT_SANDBOX=none)'),
    failures: z.array(z.object({ kind: z.string(), where: z.string(), count: z.number() })).nullable(),
  }),
});
