// The optional second listener (RFT_METRICS_PORT on RFT_METRICS_HOST, loopback by default): only
// GET /metrics, without credentials, for a scraper inside the cluster that holds no key. Built like
// every listener (src/http/listener.ts): the same timeouts, its share of the process's connections
// (RFT_METRICS_MAX_CONNECTIONS, so a flood of it cannot take the descriptors the trainer's calls need),
// and, as it takes no credential, a foreign Host or a browser's Origin refused (RFT_METRICS_ALLOWED_*).
// Nothing of the application (auth, routes, rate limits) is reachable through it.
import { registerErrorReplies } from './error-replies.js';
import { buildListener, type ListenerOptions } from './listener.js';
import type { Metrics } from '../metrics/metrics.js';

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

export type MetricsListenerSettings = Pick<ListenerOptions, 'headersTimeoutMs' | 'bodyTimeoutMs' | 'maxConnections' | 'local'>;

export async function startMetricsListener(metrics: Metrics, host: string, port: number, settings: MetricsListenerSettings): Promise<MetricsListener> {
  const { app, limits } = buildListener({ name: 'metrics', bodyLimitBytes: 1024, ...settings, fastify: { logger: false } });
  registerErrorReplies(app, limits);
  app.route({
    method: ['GET', 'HEAD'],
    url: '/metrics',
    handler: async (_req, reply) => {
      const text = await metrics.text();
      return reply.type(metrics.contentType).send(text);
    },
  });
  await app.listen({ host, port });
  const addr = app.server.address();
  const bound = typeof addr === 'object' && addr ? addr.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}
