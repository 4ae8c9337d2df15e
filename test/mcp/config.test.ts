// mcp.json: what is accepted, and every mistake stops the boot with RFT_ERR_MCP_CONFIG naming it.
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { expand, loadMcpConfig, pythonToolServers, withPythonTools } from '../../src/mcp/config.js';
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

  it('refuses a sandboxed server that is shared or not stdio, and mounts that are missing', () => {
    expect(fail({ a: { command: 'x', sandbox: true, scope: 'shared' } })).toThrow(/needs "scope": "rollout"/);
    expect(fail({ a: { url: 'http://127.0.0.1/', sandbox: true } })).toThrow(/runs a stdio server/);
    expect(fail({ a: { command: 'x', sandbox: true, mounts: ['rel/dir'] } })).toThrow(/mount \/.*\/rel\/dir is not a directory/);
    expect(fail({ a: { command: 'x', sandbox: true, mounts: ['/no/such/dir'] } })).toThrow(/is not a directory/);
    expect(fail({ a: { command: 'x', mounts: ['/usr'] } })).toThrow(/for sandboxed servers/);
  });

  it("resolves relative paths against mcp.json's folder: a command with a /, arguments naming what is there or starting ./, mounts", () => {
    const file = writeMcpJson({
      py: {
        command: '.venv/bin/python',
        args: ['tools/server.py', './later.py', '-m', 'pkg', 'python3', '${RFT_WORKSPACE}/x', '/abs/y'],
        sandbox: true,
        mounts: ['.venv', 'tools'],
      },
      plain: { command: 'python3', args: ['-c', 'pass'] },
    });
    const dir = dirname(file);
    mkdirSync(join(dir, '.venv/bin'), { recursive: true });
    mkdirSync(join(dir, 'tools'));
    writeFileSync(join(dir, 'tools/server.py'), '');
    const [py, plain] = loadMcpConfig(file, true)?.servers ?? [];
    expect(py).toMatchObject({
      command: join(dir, '.venv/bin/python'),
      args: [join(dir, 'tools/server.py'), join(dir, 'later.py'), '-m', 'pkg', 'python3', '${RFT_WORKSPACE}/x', '/abs/y'],
      mounts: [join(dir, '.venv'), join(dir, 'tools')],
    });
    expect(plain).toMatchObject({ command: 'python3', args: ['-c', 'pass'] });
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

describe('tools/*.py servers (pythonToolServers)', () => {
  it("makes one sandboxed rollout server per file, run by the project's .venv (its real path), at least 60 s to start", () => {
    const root = mkdtempSync(join(tmpdir(), 'rft-mcp-pyroot-'));
    const real = mkdtempSync(join(tmpdir(), 'rft-mcp-venv-'));
    mkdirSync(join(real, 'bin'));
    writeFileSync(join(real, 'bin/python'), '');
    symlinkSync(real, join(root, '.venv'));
    const file = join(root, 'tools/lookup.py');
    const [s, ...rest] = pythonToolServers([file], root, null);
    expect(rest).toEqual([]);
    expect(s).toMatchObject({
      name: 'lookup',
      command: join(realpathSync(real), 'bin/python'),
      args: [file],
      sandbox: true,
      scope: 'rollout',
      mounts: [realpathSync(real), join(root, 'tools')],
      startTimeoutMs: 60_000,
      source: file,
    });
    expect(pythonToolServers([file], mkdtempSync(join(tmpdir(), 'rft-mcp-novenv-')), null, 90_000)[0]).toMatchObject({ command: 'python3', startTimeoutMs: 90_000 });
  });

  it('leaves a file an mcp.json server already runs to it (a project init\'ed with an mcp.json), and refuses a name both have', () => {
    const file = writeMcpJson({ python: { command: 'python3', args: ['tools/server.py'] }, lookup: { command: 'node' } });
    const dir = dirname(file);
    mkdirSync(join(dir, 'tools'));
    writeFileSync(join(dir, 'tools/server.py'), '');
    const config = loadMcpConfig(file, true);
    expect(withPythonTools(config, [join(dir, 'tools/server.py')], dir)?.servers.map((s) => s.name)).toEqual(['python', 'lookup']);
    expect(() => withPythonTools(config, [join(dir, 'tools/lookup.py')], dir)).toThrow(expect.objectContaining({ code: 'RFT_ERR_MCP_CONFIG' }));
    expect(withPythonTools(null, [], dir)).toBeNull();
  });
});
