// The durable record: list and read rollouts, re-grade a stored sample, import, and end a rollout.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { errors } from '../errors.js';
import { formatZodIssues } from '../ledger/output.js';
import { rolloutFromJson, rolloutToJson, summaryToJson } from '../protocol/record-json.js';
import { defaultGraderName } from './discovery.js';
import { INTEGRITY_KINDS } from '../integrity/flags.js';

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().max(500).optional(),
  since: z.string().optional(),
  min_score: z.coerce.number().optional(),
  max_score: z.coerce.number().optional(),
  tool: z.string().max(64).optional(),
  outcome: z.enum(['ok', 'tool_error', 'invalid_arguments', 'timeout', 'budget_exhausted', 'interrupted']).optional(),
  grader: z.string().max(64).optional(),
  flag: z.enum(['any', ...INTEGRITY_KINDS]).optional(),
});

function parseSince(s: string | undefined): number | undefined {
  if (s === undefined) return undefined;
  const t = /^\d+$/.test(s) ? Number(s) : Date.parse(s);
  if (!Number.isFinite(t)) throw errors.badRequest(`since must be an ISO time or milliseconds since epoch, got "${s}"`);
  return t;
}

export default async function rolloutRoutes(app: FastifyInstance): Promise<void> {
  const { store, registry, grading, sandboxes } = app.rft;

  app.get('/v1/rollouts', async (req) => {
    const q = listQuery.safeParse(req.query);
    if (!q.success) throw errors.badRequest(formatZodIssues(q.error.issues));
    const { min_score, max_score, tool, outcome, grader, flag } = q.data;
    const filter = {
      minScore: min_score,
      maxScore: max_score,
      tool,
      status: outcome === 'budget_exhausted' ? ('budget_exceeded' as const) : outcome,
      grader,
      flag,
    };
    const page = await store.listRollouts({ limit: q.data.limit, cursor: q.data.cursor, since: parseSince(q.data.since), filter });
    return { rollouts: page.rollouts.map(summaryToJson), next_cursor: page.nextCursor };
  });

  app.get<{ Params: { trace_id: string } }>('/v1/rollouts/:trace_id', async (req) => {
    const r = await store.getRollout(req.params.trace_id);
    if (!r) throw errors.notFound(`rollout ${req.params.trace_id}`);
    return rolloutToJson(r);
  });

  app.post<{ Params: { trace_id: string } }>('/v1/rollouts/:trace_id/regrade', async (req) => {
    const body = z.object({ grader: z.string().optional() }).safeParse(req.body ?? {});
    if (!body.success) throw errors.badRequest('expected { "grader"?: string }');
    const r = await store.getRollout(req.params.trace_id);
    if (!r) throw errors.notFound(`rollout ${req.params.trace_id}`);
    // The sample the trainer sent is the one to re-score: the latest endpoint grade's (or any grade's).
    const newestFirst = [...r.grades].reverse();
    const last = newestFirst.find((g) => g.source === 'endpoint') ?? newestFirst[0];
    if (!last) throw errors.notGraded(r.traceId);
    const name = body.data.grader ?? last.grader ?? defaultGraderName(app);
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
  });

  app.post('/v1/rollouts/import', async (req) => {
    const body = z.object({ rollouts: z.array(z.unknown()).max(10_000) }).safeParse(req.body);
    if (!body.success) throw errors.badRequest('expected { "rollouts": [ ... ] }');
    const results: { trace_id: string; status: 'imported' | 'exists' }[] = [];
    for (const [i, raw] of body.data.rollouts.entries()) {
      const r = rolloutFromJson(raw, `rollouts[${i}]`);
      results.push({ trace_id: r.traceId, status: await store.importRollout(r) });
    }
    return { results };
  });

  app.delete<{ Params: { trace_id: string } }>('/v1/rollouts/:trace_id', async (req) => {
    const destroyed = sandboxes ? await sandboxes.destroy(req.params.trace_id) : false;
    return { trace_id: req.params.trace_id, sandbox_destroyed: destroyed };
  });
}
