import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { fixtureGraders, fixtureTools, functionCall, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { spawnServer } from '../helpers/child-server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ env: { RFT_RATE_LIMIT: '5', RFT_RATE_WINDOW_MS: '60000' } });
});
afterAll(() => s.close());

describe('over real HTTP', () => {
  it('answers a curl-style function_call with a function_call_output', async () => {
    const call = functionCall('echo', { text: 'over the wire' });
    const res = await request(`${s.url}/tools`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(call),
    });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ type: 'function_call_output', call_id: call.call_id, id: call.id, output: 'over the wire' });
  });

  it('rate-limits per credential with 429 and Retry-After, leaving other keys alone', async () => {
    const other = await startFixtureServer({ env: { RFT_RATE_LIMIT: '5', RFT_API_KEYS: 'a:key-a-0123456789abcdef,b:key-b-0123456789abcdef' } });
    try {
      const get = async (key: string) => {
        const res = await request(`${other.url}/v1/tools`, { headers: { authorization: `Bearer ${key}` } });
        await res.body.dump();
        return res;
      };
      for (let i = 0; i < 5; i++) expect((await get('key-a-0123456789abcdef')).statusCode).toBe(200);
      const limited = await get('key-a-0123456789abcdef');
      expect(limited.statusCode).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      // Same client address, another credential: its own budget of requests.
      expect((await get('key-b-0123456789abcdef')).statusCode).toBe(200);
    } finally {
      await other.close();
    }
  });

  it('answers 429 with a coded JSON body', async () => {
    let last;
    for (let i = 0; i < 6; i++) {
      last = await request(`${s.url}/v1/tools`, { headers: { authorization: `Bearer ${s.key}` } });
      if (i < 5) await last.body.dump();
    }
    expect(last!.statusCode).toBe(429);
    expect(((await last!.body.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_RATE_LIMITED');
  });
});

describe('rate limits on the trainer\'s routes', () => {
  it('refuses a tool call or a grade over the limit with 503 and Retry-After (retried, never shown to the model as a 4xx)', async () => {
    const limited = await startFixtureServer({ env: { RFT_RATE_LIMIT: '2' } });
    try {
      const post = async (path: string, body: object) => {
        const res = await request(`${limited.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${limited.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: res.statusCode, retryAfter: res.headers['retry-after'], body: (await res.body.json()) as { error?: { code: string; details: unknown } } };
      };
      for (let i = 0; i < 2; i++) expect((await post('/tools', functionCall('echo', { text: 'x' }))).status).toBe(200);
      for (const [path, body] of [['/tools', functionCall('echo', { text: 'x' })], ['/graders/exact', { sample: { output_text: 'x' }, item: {} }]] as const) {
        const r = await post(path, body);
        expect(r.status).toBe(503);
        expect(Number(r.retryAfter)).toBeGreaterThan(0);
        expect(r.body.error).toMatchObject({ code: 'RFT_ERR_RATE_LIMITED_RETRY', details: { reason: 'requests' } });
      }
    } finally {
      await limited.close();
    }
  });
});

describe('boot', () => {
  it('creates a key in the data dir when none is configured and prints it once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-autokey-'));
    try {
      const env = { RFT_DATA_DIR: dataDir, RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders };
      const first = await spawnServer(env);
      const key = readFileSync(join(dataDir, 'api-key'), 'utf8').trim();
      expect(first.stderr()).toContain(key);
      const res = await request(`${first.url}/v1/tools`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
      await first.stop();
      const second = await spawnServer(env);
      expect(second.stderr()).not.toContain(key);
      await second.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('refuses to listen on a non-loopback address with no credential at all', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-insecure-'));
    try {
      await expect(
        spawnServer({ RFT_DATA_DIR: dataDir, RFT_AUTO_KEY: 'false', HOST: '0.0.0.0', RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders }),
      ).rejects.toThrow(/RFT_ERR_INSECURE_LISTEN/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  it('stops the boot naming the file when a unit is bad', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-badunit-'));
    try {
      await expect(
        spawnServer({ RFT_DATA_DIR: dataDir, RFT_API_KEYS: 'k:0123456789abcdef0', RFT_TOOLS_DIR: join(fixtureTools, '../bad-tools'), RFT_GRADERS_DIR: fixtureGraders }),
      ).rejects.toThrow(/RFT_ERR_UNIT_LOAD: .*no_description\.ts: tool "no_description" needs a description/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  it('serves HTTPS when given a certificate and key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-tls-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1',
        '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
      expect(existsSync(join(dir, 'cert.pem'))).toBe(true);
      const tls = await startFixtureServer({ env: { RFT_TLS_CERT: join(dir, 'cert.pem'), RFT_TLS_KEY: join(dir, 'key.pem') } });
      try {
        const url = tls.url.replace('http://', 'https://');
        const res = await request(`${url}/healthz`, { dispatcher: new Agent({ connect: { ca: readFileSync(join(dir, 'cert.pem')), servername: 'localhost', rejectUnauthorized: false } }) });
        expect(res.statusCode).toBe(200);
        await res.body.dump();
      } finally {
        await tls.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
