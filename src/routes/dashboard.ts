// GET /dashboard: the live dashboard's page, script and styles, and uPlot from node_modules. These
// are static and hold no data, so they need no credential (a browser cannot send one on navigation);
// the page signs in with a key and reads the JSON routes (/v1/stats, /v1/rollouts) with it.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';

// No inline script or style, nothing from another origin, no framing, no referrer.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const SUMMARY: Record<string, string> = {
  '/dashboard': 'The live dashboard (HTML page; signs in with a key kept in the tab)',
  '/dashboard/dashboard.js': "The dashboard's script",
  '/dashboard/dashboard.css': "The dashboard's styles",
  '/dashboard/uplot.js': 'uPlot, the chart library (from node_modules)',
  '/dashboard/uplot.css': "uPlot's styles",
};

export default async function dashboardRoutes(app: FastifyInstance): Promise<void> {
  const { auth } = app.rft;
  // Beside this module's folder: src/dashboard in the source tree, dist/src/dashboard in a build
  // (npm run build copies it).
  const dir = join(import.meta.dirname, '..', 'dashboard');
  const require = createRequire(import.meta.url);
  // The page tells the script which header carries the key (RFT_API_KEY_HEADERS).
  const header = auth.keyHeaders[0] ?? { name: 'authorization', scheme: 'bearer' };
  const files: Record<string, { body: string; type: string }> = {
    '/dashboard': {
      body: readFileSync(join(dir, 'index.html'), 'utf8').replace('{{KEY_HEADER}}', header.name).replace('{{KEY_SCHEME}}', header.scheme),
      type: 'text/html; charset=utf-8',
    },
    '/dashboard/dashboard.js': { body: readFileSync(join(dir, 'dashboard.js'), 'utf8'), type: 'text/javascript; charset=utf-8' },
    '/dashboard/dashboard.css': { body: readFileSync(join(dir, 'dashboard.css'), 'utf8'), type: 'text/css; charset=utf-8' },
    '/dashboard/uplot.js': { body: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'), type: 'text/javascript; charset=utf-8' },
    '/dashboard/uplot.css': { body: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'), type: 'text/css; charset=utf-8' },
  };
  for (const [url, f] of Object.entries(files)) {
    app.get(url, { config: { public: true }, schema: { summary: SUMMARY[url] ?? url, tags: ['dashboard'] } }, async (_req, reply) =>
      reply
        .type(f.type)
        .header('content-security-policy', CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-cache')
        .send(f.body),
    );
  }
  app.get('/dashboard/', { config: { public: true }, schema: { summary: 'Redirects to /dashboard', tags: ['dashboard'] } }, async (_req, reply) =>
    reply.redirect('/dashboard'),
  );
}
