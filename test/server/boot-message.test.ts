// The boot message says which credentials the server accepts. Setting RFT_API_KEYS turns off the
// generated key in data/api-key that the CLI and dashboard were using: it says so, by name, instead of
// the 401s that followed silently. It also counts its units in English and prints a curl that reaches it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { reachableHost, startServer } from '../../src/server.js';
import { fixtureGraders, fixtureTools } from '../helpers/fixtures.js';
import { reexport, removeTempDirs, unitsDir } from '../cli/harness.js';

const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(removeTempDirs);

/** Boots a real server with this environment and returns what it printed on stderr. */
async function bootText(env: Record<string, string>, dataDir: string): Promise<string> {
  let text = '';
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    text += String(chunk);
    return true;
  });
  const config = loadConfig({ RFT_LOG_LEVEL: 'silent', RFT_SANDBOX: 'none', RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders, ...env, RFT_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0' });
  const { app } = await startServer(config);
  await app.close();
  vi.restoreAllMocks();
  return text;
}

const dataDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'rft-boot-'));
  dirs.push(d);
  return d;
};

describe('the boot message', () => {
  it('with RFT_API_KEYS set and a generated key in the data dir, says that key is off and how to keep it', async () => {
    const dir = dataDir();
    writeFileSync(join(dir, 'api-key'), 'rft_generated_before\n');
    const text = await bootText({ RFT_API_KEYS: 'openai:rft_aaaaaaaaaaaaaaaaaaaaaaaa,ci:rft_bbbbbbbbbbbbbbbbbbbbbbbb' }, dir);
    expect(text).toContain('Credentials: the keys of RFT_API_KEYS (labels: openai, ci), sent as "Authorization: Bearer <key>"');
    expect(text).toContain(`The generated key in ${join(dir, 'api-key')} is OFF because RFT_API_KEYS is set`);
    expect(text).not.toContain('rft_generated_before');
    expect(text).not.toContain('rft_aaaa');
  });

  it('with RFT_API_KEYS set and no generated key, names the active keys only', async () => {
    const text = await bootText({ RFT_API_KEYS: 'openai:rft_aaaaaaaaaaaaaaaaaaaaaaaa', RFT_API_KEY_HEADERS: 'X-Functions-Key,Authorization' }, dataDir());
    expect(text).toContain('Credentials: the keys of RFT_API_KEYS (labels: openai), sent as "X-Functions-Key: <key>" or "Authorization: Bearer <key>"');
    expect(text).not.toContain('OFF');
  });

  it('without a credential, names the generated key it uses', async () => {
    const dir = dataDir();
    const first = await bootText({}, dir);
    expect(first).toContain('created an API key');
    expect(first).toContain(`Credentials: the generated key in ${join(dir, 'api-key')} (label "local")`);
    expect(await bootText({}, dir)).toContain(`Credentials: the generated key in ${join(dir, 'api-key')} (label "local")`);
  });

  it('counts one tool and one grader in the singular', async () => {
    const tools = unitsDir({ 'echo.ts': reexport('test/fixtures/units/tools/echo.ts') });
    const graders = unitsDir({ 'exact.ts': reexport('test/fixtures/units/graders/exact.ts') });
    const text = await bootText({ RFT_TOOLS_DIR: tools, RFT_GRADERS_DIR: graders }, dataDir());
    expect(text).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ \(1 tool, 1 grader, sandbox: none\)/);
  });

  it('names the door listeners it started (NeMo Gym, private), with their addresses', async () => {
    const text = await bootText({ RFT_NEMO_GYM_PORT: '0', RFT_PRIVATE_PORT: '0' }, dataDir());
    expect(text).toMatch(/\n {2}NeMo Gym door: http:\/\/127\.0\.0\.1:\d+ \(no credential/);
    expect(text).toMatch(/\n {2}private listener \(OpenEnv, reward, SandboxFusion doors\): http:\/\/127\.0\.0\.1:\d+ \(no credential/);
    const plain = await bootText({}, dataDir());
    expect(plain).not.toContain('NeMo Gym door');
    expect(plain).not.toContain('private listener');
  });

  it('prints a curl to a reachable address when it listens on every interface', () => {
    expect(reachableHost('0.0.0.0')).toBe('127.0.0.1');
    expect(reachableHost('::')).toBe('::1');
    expect(reachableHost('10.1.2.3')).toBe('10.1.2.3');
  });
});
