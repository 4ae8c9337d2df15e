import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isLoopback, loadConfig } from '../src/config.js';
import { DEFAULT_SANDBOX_CAP, sandboxCap } from '../src/sandbox/capacity.js';
import { codeOf } from './helpers/codes.js';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
function file(content: unknown): string {
  const d = mkdtempSync(join(tmpdir(), 'rft-config-'));
  dirs.push(d);
  const p = join(d, 'config.json');
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}

describe('configuration', () => {
  it('has working defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 8787, host: '127.0.0.1', toolBudget: 50, maxOutputBytes: 16384, apiKeys: [], autoKey: true });
  });

  it('caps sandbox inodes (RFT_SANDBOX_INODES), refusing values too small to start a sandbox', () => {
    expect(loadConfig({}).sandbox.limits.inodes).toBe(16_384);
    expect(loadConfig({ RFT_SANDBOX_INODES: '5000' }).sandbox.limits.inodes).toBe(5000);
    expect(() => loadConfig({ RFT_SANDBOX_INODES: '10' })).toThrow(/RFT_SANDBOX_INODES/);
  });

  it('leaves the sandbox cap to the driver unless RFT_SANDBOX_CAP sets it (Docker engines too); RFT_SANDBOX_WARM sizes the bwrap pool', () => {
    const unset = loadConfig({ RFT_DOCKER_HOSTS: 'unix:///a.sock,unix:///b.sock?cap=7' });
    expect(unset.sandbox.cap).toBeUndefined();
    expect([sandboxCap(unset.sandbox.cap, 'bwrap'), sandboxCap(unset.sandbox.cap, 'docker')]).toEqual([DEFAULT_SANDBOX_CAP.bwrap, DEFAULT_SANDBOX_CAP.docker]);
    expect(unset.sandbox.dockerHosts.map((h) => h.cap)).toEqual([DEFAULT_SANDBOX_CAP.docker, 7]);
    // A 500-rollout step fits, with the previous step's graded sandboxes still in their grace period.
    expect(DEFAULT_SANDBOX_CAP.bwrap).toBeGreaterThanOrEqual(1000);
    expect([loadConfig({}).sandbox.localWarm, loadConfig({ RFT_SANDBOX_WARM: '512' }).sandbox.localWarm]).toEqual([2, 512]);
    // The pool learns the step by default, within 512 MB; 0 turns the learning off.
    expect(loadConfig({}).sandbox).toMatchObject({ localWarmMaxMb: 512, localWarmIdleMs: 1_800_000, localCap: undefined });
    expect(loadConfig({ RFT_SANDBOX_WARM_MAX_MB: '0', RFT_SANDBOX_CAP: '64' }).sandbox).toMatchObject({ localWarmMaxMb: 0, localCap: 64 });
    const set = loadConfig({ RFT_SANDBOX_CAP: '64', RFT_DOCKER_HOSTS: 'unix:///a.sock' });
    expect([sandboxCap(set.sandbox.cap, 'bwrap'), sandboxCap(set.sandbox.cap, 'docker'), set.sandbox.dockerHosts[0]?.cap]).toEqual([64, 64, 64]);
  });

  it('picks the SQLite durability, refusing other values by name', () => {
    expect(loadConfig({}).store).toEqual({ kind: 'sqlite', sync: 'full' });
    expect(loadConfig({ RFT_SQLITE_SYNC: 'normal' }).store).toEqual({ kind: 'sqlite', sync: 'normal' });
    expect(() => loadConfig({ RFT_SQLITE_SYNC: 'off' })).toThrow(/RFT_SQLITE_SYNC/);
  });

  it('parses labelled and bare keys and whsec secrets', () => {
    const c = loadConfig({ RFT_API_KEYS: 'trainer:abcdefghijklmnop0, qrstuvwxyz0123456', RFT_SIGNING_SECRETS: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });
    expect(c.apiKeys).toEqual([{ label: 'trainer', key: 'abcdefghijklmnop0' }, { label: 'key2', key: 'qrstuvwxyz0123456' }]);
    expect(c.signingSecrets).toHaveLength(1);
  });

  it('refuses short keys and malformed secrets, naming the setting', () => {
    expect(() => loadConfig({ RFT_API_KEYS: 'a:short' })).toThrow(/RFT_API_KEYS: key "a" is shorter than 16/);
    expect(() => loadConfig({ RFT_SIGNING_SECRETS: 'not-a-secret' })).toThrow(/RFT_SIGNING_SECRETS: secret #1 must be "whsec_"/);
    expect(codeOf(() => loadConfig({ PORT: '70000' }))).toBe('RFT_ERR_CONFIG');
  });

  it('refuses a JSON depth past what the store can write (1,000 at most)', () => {
    expect(loadConfig({ RFT_MAX_JSON_DEPTH: '1000' }).maxJsonDepth).toBe(1000);
    expect(codeOf(() => loadConfig({ RFT_MAX_JSON_DEPTH: '5000' }))).toBe('RFT_ERR_CONFIG');
  });

  it('reads a config file, and the environment wins over it', () => {
    const p = file({ PORT: 9000, RFT_TOOL_BUDGET: 7, RFT_API_KEYS: ['f:abcdefghijklmnop0'] });
    const c = loadConfig({ RFT_TOOL_BUDGET: '9' }, { configFile: p });
    expect(c.port).toBe(9000);
    expect(c.toolBudget).toBe(9);
    expect(c.apiKeys[0]?.label).toBe('f');
  });

  it('refuses unknown settings and unreadable files', () => {
    expect(() => loadConfig({}, { configFile: file({ RFT_TOOL_BUGDET: 7 }) })).toThrow(/unknown setting\(s\) in .*: RFT_TOOL_BUGDET/);
    expect(codeOf(() => loadConfig({}, { configFile: file('{not json') }))).toBe('RFT_ERR_CONFIG');
  });

  it('wants TLS certificate and key together', () => {
    expect(() => loadConfig({ RFT_TLS_CERT: '/x.pem' })).toThrow(/RFT_TLS_CERT and RFT_TLS_KEY must be set together/);
  });

  it('takes a redis:// or rediss:// URL for shared rate limits, and nothing else', () => {
    expect(loadConfig({}).rateLimit.redisUrl).toBeUndefined();
    expect(loadConfig({ RFT_REDIS_URL: 'rediss://:pw@cache:6380/2' }).rateLimit.redisUrl).toBe('rediss://:pw@cache:6380/2');
    expect(codeOf(() => loadConfig({ RFT_REDIS_URL: 'cache:6379' }))).toBe('RFT_ERR_CONFIG');
  });

  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '127.5.0.1', 'localhost', '::1'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '10.0.0.1', '::', 'example.com', '127.999.0.1', '127.0.0.1.example.com'].some(isLoopback)).toBe(false);
  });
});
