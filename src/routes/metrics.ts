// GET /metrics: Prometheus text format, behind the credentials like every other route (a scraper
// sends the key as a bearer token: `authorization` in its scrape config). RFT_METRICS_PORT serves the
// same text without credentials on a second listener (src/http/metrics-listener.ts).
import type { FastifyInstance } from 'fastify';

export default async function metricsRoutes(app: FastifyInstance): Promise<void> {
  const { metrics } = app.rft;
  if (!metrics) return;
  app.get(
    '/metrics',
    { schema: { summary: 'Prometheus metrics (text format 0.0.4); RFT_METRICS_PORT serves them without a credential', tags: ['monitoring'] } },
    async (_req, reply) => reply.type(metrics.contentType).send(await metrics.text()),
  );
}
