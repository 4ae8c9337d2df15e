// mcp.json: what is accepted, and every mistake stops the boot with RFT_ERR_MCP_CONFIG naming it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { expand, loadMcpConfig } from '../../src/mcp/config.js';
import { writeMcpJson } from './helpers.js';

const fail = (servers: Record<string, unknown>) => () => loadMcpConfig(writeMcpJson(servers), true);

describe('mcp.json', () => {
  it('is optional where it was not asked for, required where it was', () => {
    const missing = join(mkdtempSync(join(tmpdir(), 'rft-mcp-none-')), 'mcp.json');
    expect(loadMcpConfig(missing, false)).toBeNull();
    expect(() => loadMcpConfig(missing, true)).toThrow(expect.objectContaining({ code: 'RFT_ERR_MCP_CONFIG' }));
  });

  it('reads the mcpServers shape with the defaults filled in', () => {
    const c = loadMcpConfig(writeMcpJson({ memory: { command: 'node', args: ['x.js'] }, docs: { url: 'http://127.0.0.1:9/mcp', scope: 'shared' } }), true);
    expect(c?.servers).toMatchObject([
      { name: 'memory', command: 'node', args: ['x.js'], env: {}, scope: 'rollout', sandbox: false, prefix: '', cost: 1, serial: false, mounts: [] },
      { name: 'docs', url: 'http://127.0.0.1:9/mcp', headers: {}, scope: 'shared' },
    ]);
  });

  it("takes a server's start bound from its entry, else from RFT_MCP_START_TIMEOUT_MS (30 s unset)", () => {
    const file = writeMcpJson({ own: { command: 'node', startTimeoutMs: 5_000 }, other: { command: 'node' } });
    expect(loadConfig({}).mcpConfig.startTimeoutMs).toBe(30_000);
    const bound = loadConfig({ RFT_MCP_START_TIMEOUT_MS: '45000' }).mcpConfig.startTimeoutMs;
    expect(loadMcpConfig(file, true, bound)?.servers.map((s) => s.startTimeoutMs)).toEqual([5_000, 45_000]);
    expect(loadMcpConfig(file, true)?.servers.map((s) => s.startTimeoutMs)).toEqual([5_000, 30_000]);
    expect(() => loadConfig({ RFT_MCP_START_TIMEOUT_MS: '50' })).toThrow(expect.objectContaining({ code: 'RFT_ERR_CONFIG' }));
  });

  it('refuses what is not JSON, unknown fields and a server that is neither stdio nor HTTP', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-mcp-bad-'));
    writeFileSync(join(dir, 'mcp.json'), '{ nope');
    expect(() => loadMcpConfig(join(dir, 'mcp.json'), true)).toThrow(/not valid JSON/);
    expect(fail({ a: { command: 'x', bogus: 1 } })).toThrow(/bogus/);
    expect(fail({ a: {} })).toThrow(/either "command".*or "url"/);
    expect(fail({ a: { command: 'x', url: 'http://127.0.0.1/' } })).toThrow(/either "command"/);
    expect(fail({ a: { url: 'http://127.0.0.1/', args: ['x'] } })).toThrow(/are for stdio servers/);
  });

  it('refuses a sandboxed server that is shared or not stdio, and mounts that are relative or missing', () => {
    expect(fail({ a: { command: 'x', sandbox: true, scope: 'shared' } })).toThrow(/needs "scope": "rollout"/);
    expect(fail({ a: { url: 'http://127.0.0.1/', sandbox: true } })).toThrow(/runs a stdio server/);
    expect(fail({ a: { command: 'x', sandbox: true, mounts: ['rel/dir'] } })).toThrow(/absolute host path/);
    expect(fail({ a: { command: 'x', sandbox: true, mounts: ['/no/such/dir'] } })).toThrow(/is not a directory/);
    expect(fail({ a: { command: 'x', mounts: ['/usr'] } })).toThrow(/for sandboxed servers/);
  });

  it('expands only ${RFT_TRACE_ID} and ${RFT_WORKSPACE}, and only for rollout servers', () => {
    expect(fail({ a: { command: 'x', args: ['${HOME}/x'] } })).toThrow(/args\[0\]: unknown variable \$\{HOME\}/);
    expect(fail({ a: { command: 'x', env: { F: '${RFT_WORKSPACE}/f' }, scope: 'shared' } })).toThrow(/env\.F: .*per rollout.*shared/);
    expect(expand('${RFT_WORKSPACE}/memory-${RFT_TRACE_ID}.jsonl', { RFT_TRACE_ID: 'trace_1', RFT_WORKSPACE: '/workspace' })).toBe('/workspace/memory-trace_1.jsonl');
  });

  it('refuses server names and prefixes a tool name could not carry', () => {
    expect(fail({ 'bad name': { command: 'x' } })).toThrow(/server names/);
    expect(fail({ a: { command: 'x', prefix: 'has.dot' } })).toThrow(/prefix/);
  });
});
