// The durable record: list and read rollouts, re-grade a stored sample, import, and end a rollout.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from '@fastify/type-provider-zod';
import { z } from 'zod';
import { parseInstant } from '../stats/time.js';
import { errors } from '../errors.js';
import { rolloutFromJson, rolloutJsonSchema, rolloutToJson, summaryJsonSchema, summaryToJson } from '../protocol/record-json.js';
import { traceIdSchema } from '../protocol/wire.js';
import { defaultGrader } from '../registry/loader.js';
import { INTEGRITY_KINDS } from '../integrity/flags.js';
import { RUN_LABEL_MAX } from '../protocol/run-label.js';

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().max(500).optional().describe('next_cursor of the previous page'),
  since: z.string().optional().describe('only rollouts updated since: ISO time or ms since epoch'),
  min_score: z.coerce.number().optional().describe('last score at least'),
  max_score: z.coerce.number().optional().describe('last score at most'),
  tool: z.string().max(128).optional().describe('with a call of this tool'),
  outcome: z.enum(['ok', 'tool_error', 'invalid_arguments', 'timeout', 'budget_exhausted', 'interrupted']).optional().describe('with a call of this outcome'),
  grader: z.string().max(128).optional().describe('graded by this grader'),
  flag: z.enum(['any', ...INTEGRITY_KINDS]).optional().describe('with an integrity flag (of this kind)'),
  door: z.string().max(64).optional().describe("came through this door: 'agent-rft' or 'nemo-gym'"),
  run: z.string().max(RUN_LABEL_MAX).optional().describe('labelled with this run (x-rft-run)'),
});
const traceParams = z.object({ trace_id: traceIdSchema });
const listReply = z.object({ rollouts: z.array(summaryJsonSchema), next_cursor: z.string().nullable() });
const regradeBody = z.object({ grader: z.string().optional().describe('default: the grader of the last grade') }).nullish();
const regradeReply = z.object({
  trace_id: z.string(),
  grader: z.string(),
  previous: z.object({ score: z.number().nullable(), grader_version: z.string() }).nullable(),
  current: z.object({
    score: z.number().nullable(),
    grader_version: z.string(),
    subscores: z.record(z.string(), z.number()).nullable(),
    explanation: z.string().nullable(),
  }),
});
const importBody = z.object({ rollouts: z.array(z.unknown()).max(10_000).describe('rollouts as GET /v1/rollouts/{trace_id} answers them') });
const importReply = z.object({ results: z.array(z.object({ trace_id: z.string(), status: z.enum(['imported', 'exists']) })) });
const deleteReply = z.object({ trace_id: z.string(), sandbox_destroyed: z.boolean() });

function parseSince(s: string | undefined): number | undefined {
  if (s === undefined) return undefined;
  const t = parseInstant(s, Date.now());
  if (t === undefined) throw errors.badRequest(`since must be an ISO time (YYYY-MM-DD...), ms since the epoch or a duration back from now, between 1970 and 9999, got "${s}"`);
  return t;
}

export default async function rolloutRoutes(app: FastifyInstance): Promise<void> {
  const { store, registry, grading, sandboxes } = app.rft;

  const api = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['record'];

  api.get('/v1/rollouts', { schema: { summary: 'Recent rollouts, newest first, filtered', tags, querystring: listQuery, response: { 200: listReply } } }, async (req) => {
    const { min_score, max_score, tool, outcome, grader, flag, door, run, limit, cursor, since } = req.query;
    const filter = {
      minScore: min_score,
      maxScore: max_score,
      tool,
      status: outcome === 'budget_exhausted' ? ('budget_exceeded' as const) : outcome,
      grader,
      flag,
      door,
      run,
    };
    const page = await store.listRollouts({ limit, cursor, since: parseSince(since), filter });
    return { rollouts: page.rollouts.map(summaryToJson), next_cursor: page.nextCursor };
  });

  api.get(
    '/v1/rollouts/:trace_id',
    { schema: { summary: "One rollout: its calls in order, budget, grades and integrity flags", tags, params: traceParams, response: { 200: rolloutJsonSchema } } },
    async (req) => {
    const r = await store.getRollout(req.params.trace_id);
    if (!r) throw errors.notFound(`rollout ${req.params.trace_id}`);
    return rolloutToJson(r);
    },
  );

  api.post(
    '/v1/rollouts/:trace_id/regrade',
    { schema: { summary: 'Re-score the sample the trainer sent, with the current grader', tags, params: traceParams, body: regradeBody, response: { 200: regradeReply } } },
    async (req) => {
    const r = await store.getRollout(req.params.trace_id);
    if (!r) throw errors.notFound(`rollout ${req.params.trace_id}`);
    // The sample the trainer sent is the one to re-score: the latest endpoint grade's (or any grade's).
    const newestFirst = [...r.grades].reverse();
    const last = newestFirst.find((g) => g.source === 'endpoint') ?? newestFirst[0];
    if (!last) throw errors.notGraded(r.traceId);
    const name = req.body?.grader ?? last.grader ?? defaultGrader(app.rft.registry, app.rft.config.defaultGrader);
    const grader = registry.graders.get(name);
    if (!grader) throw errors.unknownGrader(name, [...registry.graders.keys()]);
    const previous = newestFirst.find((g) => g.grader === name && g.status === 'ok');
    const { record } = await grading.grade(grader, {
      sample: last.sample as never,
      item: r.item ?? {},
      traceId: r.traceId,
      credential: req.credential?.label ?? null,
      source: 'regrade',
      force: true,
    });
    return {
      trace_id: r.traceId,
      grader: name,
      previous: previous ? { score: previous.score, grader_version: previous.graderVersion } : null,
      current: { score: record.score, grader_version: record.graderVersion, subscores: record.subscores, explanation: record.explanation },
    };
    },
  );

  api.post('/v1/rollouts/import', { schema: { summary: 'Import exported rollouts (each once)', tags, body: importBody, response: { 200: importReply } } }, async (req) => {
    const results: { trace_id: string; status: 'imported' | 'exists' }[] = [];
    for (const [i, raw] of req.body.rollouts.entries()) {
      const r = rolloutFromJson(raw, `rollouts[${i}]`);
      results.push({ trace_id: r.traceId, status: await store.importRollout(r) });
    }
    return { results };
  });

  api.delete('/v1/rollouts/:trace_id', { schema: { summary: 'End a rollout: its sandbox goes', tags, params: traceParams, response: { 200: deleteReply } } }, async (req) => {
    const destroyed = sandboxes ? await sandboxes.destroy(req.params.trace_id) : false;
    return { trace_id: req.params.trace_id, sandbox_destroyed: destroyed };
  });
}
