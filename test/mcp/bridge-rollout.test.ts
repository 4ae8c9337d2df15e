// MCP servers published on npm, bridged with one instance per rollout inside the rollout's sandbox,
// on bubblewrap and on Docker: @modelcontextprotocol/server-memory (state per rollout, gone with
// the rollout) and @modelcontextprotocol/server-filesystem (allowed everything it can see, and it
// sees only its rollout's workspace: no host files, no other rollout, no network).
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { runCli } from '../cli/harness.js';
import { driversPresent } from '../sandbox/helpers.js';
import { callTool, getJson, NODE_MODULES, pidsWith, rolloutMarker, sandboxedMemoryServer, serverEntry, until, writeMcpJson } from './helpers.js';

const present = await driversPresent();

const marker = rolloutMarker;

function mcpJson(): string {
  const sandboxed = { sandbox: true, mounts: [NODE_MODULES] };
  return writeMcpJson({
    memory: sandboxedMemoryServer(['create_entities', 'add_observations', 'read_graph']),
    // Allowed the whole filesystem it can see: the sandbox is what confines it.
    files: {
      command: 'node',
      args: [serverEntry('server-filesystem'), '/'],
      prefix: 'fs_',
      tools: ['read_text_file', 'write_file', 'list_directory'],
      ...sandboxed,
    },
  });
}

const graph = (output: string): { entities: { name: string; observations: string[] }[] } => JSON.parse(output) as never;

for (const driver of ['bwrap', 'docker'] as const) {
  describeIf(present[driver], `MCP bridge on ${driver}`, `${driver} sandbox driver not available`)(`per-rollout MCP servers (${driver})`, () => {
    let srv: TestServer;
    let hostDir: string;

    beforeAll(async () => {
      hostDir = mkdtempSync(join(tmpdir(), 'rft-mcp-host-'));
      chmodSync(hostDir, 0o755);
      writeFileSync(join(hostDir, 'secret.txt'), 'host secret\n', { mode: 0o644 });
      srv = await startTestServer({
        toolsDir: join(repoRoot, 'test/fixtures/units/tools'),
        gradersDir: join(repoRoot, 'test/fixtures/units/graders'),
        env: { RFT_SANDBOX: driver, RFT_MCP_CONFIG: mcpJson(), RFT_SANDBOX_GRACE_MS: '200', RFT_TOOL_TIMEOUT_MS: '60000' },
      });
    });
    afterAll(async () => {
      await srv?.close();
      rmSync(hostDir, { recursive: true, force: true });
    });

    it("keeps each rollout's memory to itself, and it is gone once the rollout ends", async () => {
      const a = `trace_${randomUUID()}`;
      const b = `trace_${randomUUID()}`;
      const created = await callTool(srv, a, 'mem_create_entities', { entities: [{ name: 'alice', entityType: 'person', observations: ['likes tea'] }] });
      expect(created.status).toBe(200);
      expect(created.output).toContain('alice');
      expect(graph((await callTool(srv, b, 'mem_read_graph', {})).output).entities).toEqual([]);
      expect(graph((await callTool(srv, a, 'mem_read_graph', {})).output).entities).toMatchObject([{ name: 'alice', observations: ['likes tea'] }]);
      expect(await pidsWith(marker(a))).toHaveLength(1);

      expect(await getJson(srv, `/v1/rollouts/${a}`, 'DELETE')).toMatchObject({ sandbox_destroyed: true });
      await until(async () => (await pidsWith(marker(a))).length === 0, 20_000, 'the ended rollout has no memory server');
      // A later call of that trace starts from nothing: no instance, no file survived.
      expect(graph((await callTool(srv, a, 'mem_read_graph', {})).output).entities).toEqual([]);
      expect(graph((await callTool(srv, b, 'mem_read_graph', {})).output).entities).toEqual([]);
    });

    // A container's start and the server's in it, then up to 20 s for the grace period and removal.
    it('stops the instance after the rollout is graded and the grace period passes', { timeout: 60_000 }, async () => {
      const t = `trace_${randomUUID()}`;
      await callTool(srv, t, 'mem_read_graph', {});
      expect(await pidsWith(marker(t))).toHaveLength(1);
      const r = await fetch(`${srv.url}/graders/exact`, {
        method: 'POST',
        headers: { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sample: { output_text: 'x' }, item: { reference_answer: 'x' }, trace_id: t }),
      });
      expect(r.status).toBe(200);
      await until(async () => (await pidsWith(marker(t))).length === 0, 20_000, 'the graded rollout has no memory server');
    });

    it("serves a rollout's parallel calls, the first ones included, from one instance, one at a time when serial", async () => {
      const t = `trace_${randomUUID()}`;
      const replies = await Promise.all(
        Array.from({ length: 6 }, (_, i) => callTool(srv, t, 'mem_create_entities', { entities: [{ name: `e${i}`, entityType: 'thing', observations: [] }] })),
      );
      expect(replies.map((r) => r.status)).toEqual(Array(6).fill(200));
      expect(await pidsWith(marker(t))).toHaveLength(1);
      // `serial: true` in mcp.json: without it the memory server loses concurrent writes (it keeps one of the six).
      expect(graph((await callTool(srv, t, 'mem_read_graph', {})).output).entities.map((e) => e.name).sort()).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5']);
    });

    it('recovers from an instance killed mid-rollout: the next call answers, with the state it had saved', async () => {
      const t = `trace_${randomUUID()}`;
      await callTool(srv, t, 'mem_create_entities', { entities: [{ name: 'bob', entityType: 'person', observations: ['before'] }] });
      const [pid] = await pidsWith(marker(t));
      const running = async () => ((await fetch(`${srv.url}/readyz`).then((r) => r.json())) as { mcp: { instances: number } }).mcp.instances;
      const before = await running();
      process.kill(pid!, 'SIGKILL');
      // Gone, and seen gone by the bridge (a call racing the exit would be the call "during" the crash).
      await until(async () => !(await pidsWith(marker(t))).includes(pid!) && (await running()) === before - 1, 20_000, 'the killed server is gone');
      const after = await callTool(srv, t, 'mem_add_observations', { observations: [{ entityName: 'bob', contents: ['after'] }] });
      expect(after.output).toContain('after');
      expect(graph((await callTool(srv, t, 'mem_read_graph', {})).output).entities).toMatchObject([{ name: 'bob', observations: ['before', 'after'] }]);
      const [next] = await pidsWith(marker(t));
      expect(next).not.toBe(pid);
    });

    it('runs a retried call once and records it: the retry gets the recorded output, not a second run', async () => {
      const t = `trace_${randomUUID()}`;
      const args = { entities: [{ name: 'carol', entityType: 'person', observations: [] }] };
      const first = await callTool(srv, t, 'mem_create_entities', args, 'call_1');
      const retry = await callTool(srv, t, 'mem_create_entities', args, 'call_1');
      // Run again, the server would answer [] (carol exists); the record answers what the first run said.
      expect(first.output).toContain('carol');
      expect(retry.output).toBe(first.output);
      const again = await callTool(srv, t, 'mem_create_entities', args, 'call_2');
      expect(again.output.startsWith('[]')).toBe(true);
      const rec = await getJson(srv, `/v1/rollouts/${t}`);
      expect((rec.calls as { call_id: string }[]).map((c) => c.call_id)).toEqual(['call_1', 'call_2']);
      expect(rec.budget).toMatchObject({ used: 2 });
    });

    it('charges the budget and stops at it without reaching the server', async () => {
      const t = `trace_${randomUUID()}`;
      const item = { tool_budget: 1 };
      expect((await callTool(srv, t, 'mem_read_graph', {}, 'c1', item)).output).toContain('entities');
      expect((await callTool(srv, t, 'mem_read_graph', {}, 'c2', item)).output).toMatch(/^Tool budget exhausted/);
    });

    it('replays a bridged rollout with `replay`: the same calls give the same outputs', async () => {
      const t = `trace_${randomUUID()}`;
      await callTool(srv, t, 'mem_create_entities', { entities: [{ name: 'dana', entityType: 'person', observations: ['x'] }] });
      await callTool(srv, t, 'mem_read_graph', {});
      await callTool(srv, t, 'fs_write_file', { path: '/workspace/notes.txt', content: 'n' });
      await callTool(srv, t, 'fs_list_directory', { path: '/workspace' });
      const r = await runCli(['replay', t, '--server', srv.url, '--key', srv.key]);
      expect(r.stdout.trim().split('\n').at(-1)).toBe('MATCH');
      expect(r.code).toBe(0);
    });

    it("confines the filesystem server to its rollout's workspace: no host files, no other rollout, no network", async () => {
      const a = `trace_${randomUUID()}`;
      const b = `trace_${randomUUID()}`;
      expect((await callTool(srv, a, 'fs_write_file', { path: '/workspace/mine.txt', content: 'rollout a' })).output).toMatch(/Successfully wrote/);
      expect((await callTool(srv, a, 'fs_read_text_file', { path: '/workspace/mine.txt' })).output).toBe('rollout a');
      expect((await callTool(srv, b, 'fs_list_directory', { path: '/workspace' })).output).not.toContain('mine.txt');
      expect((await callTool(srv, b, 'fs_read_text_file', { path: '/workspace/mine.txt' })).output).toMatch(/^Error: .*ENOENT/);
      // It was allowed "/", and still: a world-readable host file, the server's data dir, root's home,
      // this repository beside the node_modules it was given read-only.
      for (const path of [join(hostDir, 'secret.txt'), join(srv.dataDir, 'rft.sqlite'), '/root/.bashrc', join(repoRoot, 'package.json')]) {
        expect((await callTool(srv, a, 'fs_read_text_file', { path })).output).toMatch(/^Error: /);
      }
      expect((await callTool(srv, a, 'fs_list_directory', { path: '/tmp' })).output).not.toContain(basename(hostDir));
      expect((await callTool(srv, a, 'fs_write_file', { path: join(NODE_MODULES, 'planted.js'), content: 'x' })).output).toMatch(/^Error: .*(EROFS|read-only|EACCES)/);
      // Its network namespace has loopback only.
      const interfaces = (await callTool(srv, a, 'fs_read_text_file', { path: '/proc/net/dev' })).output.split('\n').filter((l) => l.includes(':'));
      expect(interfaces.map((l) => l.split(':')[0]?.trim())).toEqual(['lo']);
      // The bridge's own tool beside it sees the same workspace.
      const rec = await getJson(srv, `/v1/rollouts/${a}`);
      expect((rec.calls as unknown[]).length).toBeGreaterThanOrEqual(5);
    });
  });
}

describeIf(present.bwrap, 'MCP bridge TTL on bwrap', 'bwrap sandbox driver not available')('per-rollout MCP servers and the inactivity TTL', () => {
  let srv: TestServer;

  beforeAll(async () => {
    const mcp = writeMcpJson({
      memory: { command: 'node', args: [serverEntry('server-memory'), 'rollout:${RFT_TRACE_ID}'], env: { MEMORY_FILE_PATH: '${RFT_WORKSPACE}/memory.jsonl' }, prefix: 'mem_', tools: ['read_graph'] },
    });
    // A TTL of 3 s, not 1 s: the instance must still be there for the test's scan of /proc right
    // after the call, which a loaded machine can stretch past a second.
    srv = await startTestServer({ toolsDir: join(repoRoot, 'test/fixtures/units/tools'), env: { RFT_SANDBOX: 'bwrap', RFT_MCP_CONFIG: mcp, RFT_SANDBOX_TTL_MS: '3000' } });
  });
  afterAll(async () => srv?.close());

  it('stops an idle rollout instance (on the host: sandbox false) when its rollout passes the TTL', async () => {
    const t = `trace_${randomUUID()}`;
    expect((await callTool(srv, t, 'mem_read_graph', {})).output).toContain('entities');
    expect(await pidsWith(marker(t))).toHaveLength(1);
    await until(async () => (await pidsWith(marker(t))).length === 0, 20_000, 'the idle rollout has no memory server');
  });
});
