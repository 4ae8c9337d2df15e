// Rollout MCP servers started in the warm pool's sandboxes (issue 24): a stdio server run inside the
// sandbox whose command names no rollout is started by the pool's floor of sandboxes while they wait,
// and a rollout that takes one adopts the running process (its first bridged call costs the MCP
// handshake, not the server's start), through /tools, where nothing announces a rollout (Agent RFT).
// On bubblewrap and Docker (runc: its processes are in the host's /proc), with
// @modelcontextprotocol/server-memory inside the sandbox: each rollout's memory is its own file in its
// own workspace, whoever started the process.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { driversPresent, GVISOR_ENGINE } from '../sandbox/helpers.js';
import { join } from 'node:path';
import { loadMcpConfig } from '../../src/mcp/config.js';
import { prestartOf } from '../../src/mcp/instance.js';
import { callTool, getJson, pidsWith, sandboxedMemoryServer, serverEntry, until, writeMcpJson } from './helpers.js';

const present = await driversPresent();
const marker = `pooled-memory-${process.pid}-${randomUUID()}`;

/** The memory server inside the sandbox, marked by an argument (`marker`: none names a rollout). */
const pooledMemory = (marker: string) => sandboxedMemoryServer(['create_entities', 'read_graph'], marker);

const graph = (output: string) => JSON.parse(output) as { entities: { name: string }[] };

/**
 * Pooled sandboxes ready for the rollouts' kind (the latest one taken): what a new rollout can take.
 * Not /readyz's total, which also counts the kind of the boot's probe (grading limits).
 */
async function readyForRollouts(srv: TestServer): Promise<number> {
  const stats = (await getJson(srv, '/v1/stats')) as { this_replica: { sandboxes: { pool: { kinds: { latest: boolean; warm: number }[] } } } };
  return stats.this_replica.sandboxes.pool.kinds.find((k) => k.latest)?.warm ?? 0;
}

describe('which rollout servers the pool may start ahead', () => {
  it('only stdio servers inside the sandbox whose command names no rollout', () => {
    const config = loadMcpConfig(
      writeMcpJson({
        pooled: pooledMemory(marker),
        named: pooledMemory('rollout:${RFT_TRACE_ID}'),
        namedInEnv: { ...pooledMemory(marker), env: { MEMORY_FILE_PATH: '/workspace/${RFT_TRACE_ID}.jsonl' } },
        host: { ...pooledMemory(marker), sandbox: false, mounts: [] },
        shared: { command: 'node', args: [serverEntry('server-memory')], scope: 'shared' },
      }),
      true,
    )!;
    const byName = Object.fromEntries(config.servers.map((s) => [s.name, prestartOf(s)]));
    expect(byName.pooled).toEqual({ key: 'mcp:pooled', argv: ['node', serverEntry('server-memory'), marker], env: { MEMORY_FILE_PATH: '/workspace/memory.jsonl' } });
    expect(byName.named).toBeNull();
    expect(byName.namedInEnv).toBeNull();
    expect(byName.host).toBeNull();
    expect(byName.shared).toBeNull();
  });
});

for (const driver of ['bwrap', 'docker'] as const) describeIf(present[driver], `MCP instances started in the warm pool on ${driver}`, `${driver} sandbox driver not available`)(`MCP instances started in the warm pool (${driver})`, () => {
  let srv: TestServer;
  const prestarted = async () => ((await getJson(srv, '/readyz')) as { mcp: { prestarted: number } }).mcp.prestarted;
  const running = (n: number, what: string) => until(async () => (await pidsWith(marker)).length === n, 60_000, what, 100);
  const rolloutKindWarm = () => readyForRollouts(srv);

  beforeAll(async () => {
    srv = await startTestServer({
      toolsDir: join(repoRoot, 'test/fixtures/units/tools'),
      env: { RFT_SANDBOX: driver, RFT_SANDBOX_WARM: '2', RFT_DOCKER_WARM: '2', RFT_MCP_CONFIG: writeMcpJson({ memory: pooledMemory(marker) }), RFT_TOOL_TIMEOUT_MS: '60000' },
    });
  });
  afterAll(async () => {
    await srv?.close();
    // The pool's processes go with its sandboxes when the server stops.
    await running(0, 'no memory server left after the server stopped');
  });

  it("hands a new rollout the server its pooled sandbox started; each rollout's memory stays its own", { timeout: 120_000 }, async () => {
    const a = `trace_${randomUUID()}`;
    // The first rollout's sandbox is made on demand (the pool is empty before the first): its server starts with its call.
    const created = await callTool(srv, a, 'mem_create_entities', { entities: [{ name: 'alice', entityType: 'person', observations: [] }] });
    expect(created.status, created.output).toBe(200);
    expect(await prestarted()).toBe(0);
    await running(3, "the first rollout's server and the floor's two pooled ones");
    // Ready, not only running: a pooled sandbox joins the pool once its server's handshake is done.
    await until(async () => (await rolloutKindWarm()) === 2, 60_000, 'the two pooled sandboxes ready', 100);
    const pooled = new Set(await pidsWith(marker));

    const b = `trace_${randomUUID()}`;
    expect(graph((await callTool(srv, b, 'mem_read_graph', {})).output).entities).toEqual([]);
    expect(await prestarted()).toBe(1);
    const c = `trace_${randomUUID()}`;
    expect((await callTool(srv, c, 'mem_create_entities', { entities: [{ name: 'carol', entityType: 'person', observations: [] }] })).status).toBe(200);
    expect(await prestarted()).toBe(2);
    // B and C were answered by processes that were running before they existed, not by new ones.
    await running(5, "three rollouts' servers and the floor's two again");
    const now = await pidsWith(marker);
    expect(now.filter((p) => pooled.has(p))).toHaveLength(3);

    // Each rollout's memory file is in its own workspace.
    expect(graph((await callTool(srv, a, 'mem_read_graph', {})).output).entities.map((e) => e.name)).toEqual(['alice']);
    expect(graph((await callTool(srv, b, 'mem_read_graph', {})).output).entities).toEqual([]);
    expect(graph((await callTool(srv, c, 'mem_read_graph', {})).output).entities.map((e) => e.name)).toEqual(['carol']);
    expect((await callTool(srv, b, 'read_file', { path: 'memory.jsonl' })).output).not.toContain('carol');

    // A rollout's end stops the server it adopted.
    expect(await getJson(srv, `/v1/rollouts/${c}`, 'DELETE')).toMatchObject({ sandbox_destroyed: true });
    await running(4, "the ended rollout's server gone");
    for (const t of [a, b]) await getJson(srv, `/v1/rollouts/${t}`, 'DELETE');
    await running(2, "the floor's two after every rollout ended");
  });
});

// On Docker the adopted process was spawned through the warm container's own sandbox object; the
// rollout's takes its spawned processes over, so an exec's sweep knows it as this replica's server and
// still ends what a command leaves running (gVisor has no child subreaper: the sweep is what ends a
// `setsid` leftover there). Seen from inside the sandbox: gVisor's processes are not in the host's /proc.
for (const driver of ['docker', 'gvisor'] as const) {
  const engine = driver === 'gvisor' ? { RFT_DOCKER_HOSTS: GVISOR_ENGINE, RFT_DOCKER_RUNTIME: 'runsc' } : {};
  describeIf(present[driver], `an adopted instance beside the exec sweep on ${driver}`, `${driver} sandbox driver not available`)(`MCP instance adopted from the warm pool, exec sweep (${driver})`, () => {
    let srv: TestServer;
    const readyz = async () => (await getJson(srv, '/readyz')) as { mcp: { prestarted: number } };
    beforeAll(async () => {
      srv = await startTestServer({
        toolsDir: join(repoRoot, 'tools'),
        env: { RFT_SANDBOX: 'docker', ...engine, RFT_DOCKER_WARM: '2', RFT_MCP_CONFIG: writeMcpJson({ memory: pooledMemory(`${marker}-${driver}`) }), RFT_TOOL_TIMEOUT_MS: '60000' },
      });
    });
    afterAll(async () => {
      await srv?.close();
    });

    it("ends what a command left running with its exec while the rollout's adopted instance runs", { timeout: 180_000 }, async () => {
      expect((await callTool(srv, `trace_${randomUUID()}`, 'mem_read_graph', {})).status).toBe(200);
      await until(async () => (await readyForRollouts(srv)) === 2, 120_000, 'the pool prepared for rollouts', 250);
      const before = (await readyz()).mcp.prestarted;
      const b = `trace_${randomUUID()}`;
      expect(graph((await callTool(srv, b, 'mem_read_graph', {})).output).entities).toEqual([]);
      expect((await readyz()).mcp.prestarted).toBe(before + 1);
      const loop = `loop${randomUUID().slice(0, 8)}`;
      await callTool(srv, b, 'shell', { command: `setsid sh -c 'while :; do date > loop.txt; sleep 0.1; done' ${loop} >/dev/null 2>&1 </dev/null &` });
      // The bracket keeps the probe out of its own match.
      const probe = `grep -l '${loop.slice(0, 4)}[${loop[4]}]${loop.slice(5)}' /proc/[0-9]*/cmdline 2>/dev/null | wc -l`;
      await until(async () => /--- stdout ---\n\s*0\b/.test((await callTool(srv, b, 'shell', { command: probe })).output), 15_000, 'the left loop to end', 250);
      // The adopted instance still serves the rollout.
      expect((await callTool(srv, b, 'mem_create_entities', { entities: [{ name: 'bob', entityType: 'person', observations: [] }] })).status).toBe(200);
      expect(graph((await callTool(srv, b, 'mem_read_graph', {})).output).entities.map((e) => e.name)).toEqual(['bob']);
    });
  });
}
