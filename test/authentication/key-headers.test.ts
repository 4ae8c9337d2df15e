// RFT_API_KEY_HEADERS: the key where Azure's samples put it (X-Functions-Key, api-key), over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { functionCall, startFixtureServer } from '../helpers/fixtures.js';
import { repoRoot, type TestServer } from '../helpers/server.js';
import { loadConfig } from '../../src/config.js';

let azure: TestServer;
let plain: TestServer;
beforeAll(async () => {
  azure = await startFixtureServer({ env: { RFT_API_KEY_HEADERS: 'X-Functions-Key,Authorization' } });
  plain = await startFixtureServer({});
});
afterAll(async () => {
  await azure.close();
  await plain.close();
});

async function call(s: TestServer, headers: Record<string, string>) {
  const res = await fetch(`${s.url}/tools`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(functionCall('echo', { text: 'hi' })),
  });
  return { status: res.status, json: (await res.json()) as { output?: string; error?: { code: string; message: string } } };
}

describe('key headers', () => {
  it('accepts the bare key in X-Functions-Key when that header is configured', async () => {
    const r = await call(azure, { 'X-Functions-Key': azure.key });
    expect(r.status).toBe(200);
    expect(r.json.output).toBe('hi');
    expect((await call(azure, { authorization: `Bearer ${azure.key}` })).status).toBe(200);
  });

  it('refuses X-Functions-Key when it is not configured, naming the header it expects', async () => {
    const r = await call(plain, { 'X-Functions-Key': plain.key });
    expect(r.status).toBe(401);
    expect(r.json.error!.code).toBe('RFT_ERR_AUTH_MISSING');
    expect(r.json.error!.message).toContain('Authorization: Bearer <key>');
  });

  it('refuses a wrong bare key, a Bearer-prefixed one, and a duplicated header, with the same codes as Authorization', async () => {
    for (const value of ['wrong-key-0123456789abcdef', `Bearer ${azure.key}`, `${azure.key}, ${azure.key}`, '']) {
      const r = await call(azure, { 'x-functions-key': value });
      expect(r.status, value).toBe(401);
      expect(r.json.error!.code).toBe('RFT_ERR_AUTH_INVALID');
    }
  });

  it('takes the key from the first configured header present, never from a later one', async () => {
    const r = await call(azure, { 'x-functions-key': 'wrong-key-0123456789abcdef', authorization: `Bearer ${azure.key}` });
    expect(r.status).toBe(401);
  });

  it('prints the configured header in the job fragment', async () => {
    const res = await fetch(`${azure.url}/v1/job-config?base_url=https://rft.example.com&grader=exact`, { headers: { 'x-functions-key': azure.key } });
    const body = (await res.json()) as { tools: { headers: unknown }[]; grader: { headers: unknown } };
    expect(body.tools[0]!.headers).toEqual({ 'X-Functions-Key': '<YOUR_RFT_KEY>' });
    expect(body.grader.headers).toEqual({ 'X-Functions-Key': '<YOUR_RFT_KEY>' });
  });

  it('refuses header names that cannot carry a key', () => {
    for (const bad of ['content-type', 'Webhook-Signature', 'x-forwarded-for', 'bad header', 'api-key,API-KEY']) {
      expect(() => loadConfig({ RFT_API_KEY_HEADERS: bad }), bad).toThrow(/RFT_API_KEY_HEADERS/);
    }
  });

  it('keys create prints the headers snippet for the configured header', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(repoRoot, 'src/cli/main.ts'), 'keys', 'create', '--label', 'azure'], {
      cwd: repoRoot,
      encoding: 'utf8',
      env: { ...process.env, RFT_API_KEY_HEADERS: 'api-key' },
      timeout: 30_000,
    });
    expect(r.status).toBe(0);
    const key = /^key: (\S+)$/m.exec(r.stdout)![1]!;
    expect(r.stdout).toContain(`RFT_API_KEYS=azure:${key}`);
    expect(r.stdout).toContain(JSON.stringify({ 'api-key': key }));
  }, 30_000);
});
