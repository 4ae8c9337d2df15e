// The private listener (RFT_PRIVATE_PORT): no credential, loopback unless allowed, coded errors, the
// doors of its list mounted on it, and environments its routes would shadow refused at boot.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../../src/config.js';
import { buildPrivateApp, checkShadowing } from '../../../src/doors/private/app.js';
import type { PrivateDoor } from '../../../src/doors/private/doors.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';

describe('the private listener', () => {
  let server: TestServer;
  let url: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0' } });
    url = server.app.rft.privateDoors!.url;
  });
  afterAll(async () => server?.close());

  it('listens on loopback, apart from the main listener, and answers without a credential', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toBe(server.url);
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ok: true, listener: 'private' });
  });

  it('gives an unknown route a coded 404, and a bad body a coded 4xx', async () => {
    const res = await fetch(`${url}/nope`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_NOT_FOUND');
  });

  it('mounts a door of its list, with the core and the server\'s parts', async () => {
    const door: PrivateDoor = {
      name: 'echo',
      segments: ['echo'],
      register(app, ctx) {
        app.post('/echo', async (req) => ({ body: req.body, environments: ctx.environments.list().map((e) => e.name).sort() }));
      },
    };
    const { core, config, environments, registry, ledger, grading, store, sandboxes } = server.app.rft;
    const app = await buildPrivateApp({ core, config, environments, registry, ledger, grading, store, sandboxes, log: pino({ level: 'silent' }) }, 1024, [door]);
    try {
      const ok = await app.inject({ method: 'POST', url: '/echo', payload: { a: 1 } });
      expect(ok.json()).toEqual({ body: { a: 1 }, environments: ['coding', 'finqa', 'harbor'] });
      expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toMatchObject({ doors: ['echo'] });
      const big = await app.inject({ method: 'POST', url: '/echo', payload: { a: 'x'.repeat(2000) } });
      expect(big.statusCode).toBe(413);
      expect(big.json().error.code).toBe('RFT_ERR_BODY_TOO_LARGE');
      // A door's route segment that is an environment's name is refused.
      expect(() => checkShadowing(environments, [{ ...door, segments: ['finqa'] }])).toThrow(
        expect.objectContaining({ code: 'RFT_ERR_ENVIRONMENT_SHADOWS_ROUTE' }),
      );
    } finally {
      await app.close();
    }
  });
});

describe('the private listener\'s configuration', () => {
  it('refuses a non-loopback host unless RFT_PRIVATE_ALLOW_REMOTE=1', () => {
    const base = { RFT_PRIVATE_PORT: '19700', RFT_PRIVATE_HOST: '0.0.0.0' };
    expect(() => loadConfig(base)).toThrow(expect.objectContaining({ code: 'RFT_ERR_PRIVATE_REMOTE' }));
    expect(loadConfig({ ...base, RFT_PRIVATE_ALLOW_REMOTE: '1' }).private.host).toBe('0.0.0.0');
    expect(loadConfig({ RFT_PRIVATE_PORT: '19700' }).private.host).toBe('127.0.0.1');
  });

  it('refuses at boot an environment named after one of its routes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-shadow-'));
    try {
      cpSync(join(repoRoot, 'examples/finqa'), join(dir, 'healthz'), { recursive: true, filter: (p) => !p.includes('/docs') });
      await expect(startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_ENVIRONMENTS: join(dir, 'healthz') } })).rejects.toMatchObject({
        code: 'RFT_ERR_ENVIRONMENT_SHADOWS_ROUTE',
      });
      // Without the private listener the name takes nothing.
      const s = await startTestServer({ listen: false, env: { RFT_ENVIRONMENTS: join(dir, 'healthz') } });
      expect(s.app.rft.environments.list().map((e) => e.name)).toEqual(['healthz']);
      await s.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
