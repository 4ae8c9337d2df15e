// GET /v1/stats: the live dashboard's figures (src/stats), from the record.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from '@fastify/type-provider-zod';
import { errors } from '../errors.js';
import { buildStats, defaultBucketMs, MAX_BUCKETS } from './stats.js';
import { statsQuerySchema, statsReplySchema } from './schema.js';
import { parseDuration, parseInstant } from './time.js';
import { poolReply } from './pool.js';
import type { StatsPart } from './insights.js';

const DEFAULT_SPAN_MS = 60 * 60_000;

type StatsInclude = 'calls' | 'rollouts' | 'grades' | 'integrity';
const PART_OF: Record<StatsInclude, StatsPart> = { calls: 'calls', rollouts: 'rolloutsStarted', grades: 'grades', integrity: 'flags' };

export default async function statsRoutes(app: FastifyInstance): Promise<void> {
  const { store, sandboxes, metrics } = app.rft;

  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/stats',
    {
      schema: {
        summary: 'Figures of a time window: throughput, outcomes, latency per tool, learning curve, integrity flags',
        querystring: statsQuerySchema,
        response: { 200: statsReplySchema },
      },
    },
    async (req) => {
      const now = Date.now();
      const instant = (name: string, s: string | undefined, dflt: number) => {
        if (s === undefined) return dflt;
        const t = parseInstant(s, now);
        if (t === undefined) throw errors.badRequest(`${name} must be an ISO time (YYYY-MM-DD...), ms since the epoch or a duration back from now such as "15m", between 1970 and 9999, got "${s}"`);
        return t;
      };
      const until = instant('until', req.query.until, now);
      const since = instant('since', req.query.since, until - DEFAULT_SPAN_MS);
      if (since >= until) throw errors.badRequest('since must be before until');
      const bucketMs = req.query.bucket === undefined ? defaultBucketMs(until - since) : parseDuration(req.query.bucket);
      if (bucketMs === undefined) throw errors.badRequest(`bucket must be a duration such as "1m" or "30s", got "${req.query.bucket}"`);
      if ((until - since) / bucketMs > MAX_BUCKETS) throw errors.badRequest(`at most ${MAX_BUCKETS} buckets: widen bucket or narrow the window`);
      const include = (req.query.include ?? 'calls,rollouts,grades,integrity').split(',') as StatsInclude[];
      const q = { since, until, bucketMs, parts: include.map((i) => PART_OF[i]), run: req.query.run };
      const s = sandboxes?.stats();
      return buildStats(await store.stats(q), { ...q, include: [...new Set(include)] }, {
        sandboxes: s ? { driver: s.driver, live: s.live, queued: s.queued, cap: s.cap, pool: poolReply(s.pool) } : null,
        failures: metrics ? await metrics.failureTotals() : null,
      });
    },
  );
}
