// The API reference: /openapi.json validates as OpenAPI 3 (with @readme/openapi-parser) and lists
// every route the server answers; /docs serves Swagger UI from node_modules, without a credential.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validate, compileErrors } from '@readme/openapi-parser';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ listen: false });
});
afterAll(() => s.close());

/** Every method and path the app routes, from Fastify's own route tree (HEAD twins and Swagger UI's files left out). */
function routes(): string[] {
  const out: string[] = [];
  let prefix: string[] = [];
  for (const line of s.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[└├]── (.*?) \(([A-Z, ]+)\)$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    prefix = [...prefix.slice(0, depth), m[2]!];
    const path = prefix.join('');
    for (const method of m[3]!.split(', ')) if (method !== 'HEAD' && !path.startsWith('/docs')) out.push(`${method} ${path}`);
  }
  return out;
}

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3 document, served without a credential', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\./);
    const result = await validate(structuredClone(doc));
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  it('lists every route the server answers', async () => {
    const doc = (await s.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    const listed = new Set(Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`)));
    const all = routes();
    expect(all.length).toBeGreaterThan(20);
    expect(all.filter((r) => !listed.has(r) && r !== 'GET /openapi.json')).toEqual([]);
    for (const r of ['POST /tools', 'POST /tools/:name', 'POST /grade', 'GET /v1/stats', 'GET /metrics', 'POST /mcp']) expect(listed).toContain(r);
  });

  it('declares the requests and replies with their fields', async () => {
    const doc = (await s.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const tools = doc.paths['/tools'].post;
    expect(Object.keys(tools.requestBody.content['application/json'].schema.properties)).toEqual(expect.arrayContaining(['call_id', 'trace_id', 'arguments', 'item']));
    expect(Object.keys(tools.responses['200'].content['application/json'].schema.properties)).toEqual(expect.arrayContaining(['type', 'call_id', 'output']));
    expect(doc.paths['/v1/stats'].get.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['since', 'until', 'bucket']));
    expect(doc.paths['/healthz'].get.security).toEqual([]);
  });
});

describe('/docs', () => {
  it('serves Swagger UI and its files without a credential, from this server only', async () => {
    expect([200, 302]).toContain((await s.app.inject({ method: 'GET', url: '/docs' })).statusCode);
    const page = await s.app.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('swagger-ui');
    expect(page.body).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/);
    const init = await s.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(init.statusCode).toBe(200);
    expect((await s.app.inject({ method: 'GET', url: '/docs/json' })).json().openapi).toMatch(/^3\./);
  });
});
