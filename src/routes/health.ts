// Liveness and readiness; the only routes that need no credential.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from '@fastify/type-provider-zod';
import { z } from 'zod';
import type { SandboxStats } from '../sandbox/types.js';

const readySchema = z.looseObject({
  status: z.enum(['ready', 'unavailable']),
  store: z.string().describe('"writable", or why not'),
  tools: z.number(),
  graders: z.number(),
  sandboxes: z.unknown().describe('driver, live, queued, cap ... (null: sandboxes off)'),
  mcp: z.unknown(),
  connections: z.unknown().describe('open, unauthenticated, closed for room'),
});

/**
 * What /readyz, which needs no credential, shows of the sandboxes: the warm pool's totals only; its
 * kinds (host paths of read-only mounts) and steps are behind the key, in GET /v1/stats.
 */
function publicStats(s: SandboxStats) {
  const p = s.pool;
  return { ...s, pool: p && { warm: p.warm, target: p.target, predicted: p.predicted, hits: p.hits, misses: p.misses } };
}

export default async function healthRoutes(app: FastifyInstance): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['monitoring'];
  api.get(
    '/healthz',
    { config: { public: true }, schema: { summary: 'Alive', tags, response: { 200: z.object({ status: z.literal('ok') }) } } },
    async () => ({ status: 'ok' as const }),
  );

  api.get('/readyz', { config: { public: true }, schema: { summary: 'Ready: the store writes (503 when it cannot), units and sandboxes', tags, response: { 200: readySchema, 503: readySchema } } }, async (_req, reply) => {
    const { store, sandboxes, registry, connections, mcp } = app.rft;
    const body: Record<string, unknown> = {
      tools: registry.tools.size,
      graders: registry.graders.size,
      sandboxes: sandboxes ? publicStats(sandboxes.stats()) : null,
      mcp: mcp ? mcp.stats() : null,
      connections: connections.stats(),
    };
    try {
      await store.ping();
      return { status: 'ready' as const, store: 'writable', ...body } as z.infer<typeof readySchema>;
    } catch (e) {
      return reply.status(503).send({ status: 'unavailable' as const, store: (e as Error).message, ...body } as z.infer<typeof readySchema>);
    }
  });
}
