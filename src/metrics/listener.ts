// The optional second listener (RFT_METRICS_PORT on RFT_METRICS_HOST, loopback by default): only
// GET /metrics, without credentials, for a scraper inside the cluster that holds no key. Plain
// node:http: nothing of the application (auth, routes, rate limits) is reachable through it.
import { createServer, type Server } from 'node:http';
import type { Metrics } from './metrics.js';

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsListener(metrics: Metrics, host: string, port: number): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics is served here\n');
      return;
    }
    metrics.text().then(
      (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(req.method === 'HEAD' ? undefined : text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  server.keepAliveTimeout = 75_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  const bound = typeof addr === 'object' && addr ? addr.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
