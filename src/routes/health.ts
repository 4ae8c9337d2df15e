// Liveness and readiness; the only routes that need no credential.
import type { FastifyInstance } from 'fastify';

export default async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', { config: { public: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { config: { public: true } }, async (_req, reply) => {
    const { store, sandboxes, registry, connections, mcp } = app.rft;
    const body: Record<string, unknown> = {
      tools: registry.tools.size,
      graders: registry.graders.size,
      sandboxes: sandboxes ? sandboxes.stats() : null,
      mcp: mcp ? mcp.stats() : null,
      connections: connections.stats(),
    };
    try {
      await store.ping();
      return { status: 'ready', store: 'writable', ...body };
    } catch (e) {
      return reply.status(503).send({ status: 'unavailable', store: (e as Error).message, ...body });
    }
  });
}
