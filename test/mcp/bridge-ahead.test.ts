// A door that announces its rollouts (NeMo Gym's /seed_session) starts the rollout's sandbox ahead,
// and with it the instances of the per-rollout MCP servers whose tools the row offers, so the
// rollout's first bridged call is answered by an instance already running (issue 24). On bubblewrap,
// with @modelcontextprotocol/server-memory inside the sandbox, as test/mcp/bridge-rollout.test.ts.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { driversPresent } from '../sandbox/helpers.js';
import { postOnce, type Cookies } from '../helpers/nemo-gym-client.js';
import { SESSION_COOKIE } from '../../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../../src/doors/nemo-gym/sessions.js';
import type { McpBridge } from '../../src/mcp/bridge.js';
import { getJson, NODE_MODULES, pidsWith, rolloutMarker, sandboxedMemoryServer, serverEntry, until, writeMcpJson } from './helpers.js';

const present = await driversPresent();

const marker = rolloutMarker;

const counterDir = mkdtempSync(join(tmpdir(), 'rft-mcp-starts-'));

function mcpJson(): string {
  return writeMcpJson({
    memory: sandboxedMemoryServer(['create_entities', 'read_graph']),
    // On the host, its second start (the first after the boot's) failing: the start ahead of a test below.
    flaky: {
      command: 'node',
      args: [join(repoRoot, 'test/mcp/fixtures/fails-second-start.mjs'), 'rollout:${RFT_TRACE_ID}'],
      env: { START_COUNT_FILE: join(counterDir, 'starts'), MEMORY_SERVER_ENTRY: serverEntry('server-memory'), MEMORY_FILE_PATH: '${RFT_WORKSPACE}/memory.jsonl' },
      prefix: 'flaky_',
      tools: ['read_graph'],
    },
    // A second rollout server, whose tools the rows here never offer: it is never started ahead.
    files: { command: 'node', args: [serverEntry('server-filesystem'), '/'], prefix: 'fs_', tools: ['list_directory'], sandbox: true, mounts: [NODE_MODULES] },
  });
}

/** A NeMo Gym row offering these tools, with a sandbox (an empty workspace). */
const gymRow = (tools: string[]) => ({
  responses_create_params: { input: [{ role: 'user', content: 'hi' }], tools: tools.map((name) => ({ type: 'function', name, parameters: { type: 'object', properties: {} } })) },
  sandbox: {},
});

describeIf(present.bwrap, 'MCP instances started with the sandbox', 'bwrap sandbox driver not available')('MCP instances started ahead by /seed_session (bwrap)', () => {
  let srv: TestServer;
  let door: string;
  let envDir: string;
  let bridge: McpBridge;

  beforeAll(async () => {
    // No environments: the rows' tools (bridged and tools/) need not be one environment's.
    envDir = mkdtempSync(join(tmpdir(), 'rft-no-env-'));
    srv = await startTestServer({
      gradersDir: join(repoRoot, 'test/fixtures/units/graders'),
      env: { RFT_SANDBOX: 'bwrap', RFT_MCP_CONFIG: mcpJson(), RFT_NEMO_GYM_PORT: '0', RFT_ENVIRONMENTS: envDir, RFT_DEFAULT_GRADER: 'exact', RFT_TOOL_TIMEOUT_MS: '60000', RFT_SQLITE_SYNC: 'normal' },
    });
    door = srv.app.rft.nemoGym!.url;
    bridge = srv.app.rft.mcp!;
  });
  afterAll(async () => {
    await srv?.close();
    rmSync(envDir, { recursive: true, force: true });
    rmSync(counterDir, { recursive: true, force: true });
  });

  const seed = async (tools: string[]): Promise<{ cookies: Cookies; traceId: string }> => {
    const r = await postOnce(door, '/seed_session', gymRow(tools));
    expect(r.status, r.text).toBe(200);
    return { cookies: r.cookies, traceId: traceIdOf(r.cookies[SESSION_COOKIE]!) };
  };
  const call = (cookies: Cookies, tool: string, args: unknown) => postOnce(door, `/${tool}`, args, { cookies });
  const running = async () => ((await fetch(`${srv.url}/readyz`).then((r) => r.json())) as { mcp: { instances: number } }).mcp.instances;

  it("starts the row's server with the sandbox, before any call; the first call is answered by it; the rollout's end stops it", async () => {
    const before = await running();
    const s = await seed(['mem_read_graph', 'mem_create_entities', 'list_files']);
    await until(async () => (await pidsWith(marker(s.traceId))).length === 1 && (await running()) === before + 1, 30_000, 'the memory server running before any call');
    expect(bridge.rolloutServers(s.traceId)).toEqual(['memory']);
    const [pid] = await pidsWith(marker(s.traceId));

    const created = await call(s.cookies, 'mem_create_entities', { entities: [{ name: 'alice', entityType: 'person', observations: [] }] });
    expect(created.status).toBe(200);
    expect(created.text).toContain('alice');
    expect(await pidsWith(marker(s.traceId))).toEqual([pid]);
    expect(await running()).toBe(before + 1);

    expect(await getJson(srv, `/v1/rollouts/${s.traceId}`, 'DELETE')).toMatchObject({ sandbox_destroyed: true });
    await until(async () => (await pidsWith(marker(s.traceId))).length === 0 && (await running()) === before, 20_000, 'the ended rollout has no memory server');
    expect(bridge.rolloutServers(s.traceId)).toEqual([]);
  });

  it('a rollout offered no bridged tool starts none', async () => {
    const s = await seed(['list_files']);
    // The call works in the sandbox built ahead: what starts with it has started by the time it answers.
    const r = await call(s.cookies, 'list_files', {});
    expect(r.status).toBe(200);
    expect(bridge.rolloutServers(s.traceId)).toEqual([]);
    expect(await pidsWith(marker(s.traceId))).toEqual([]);
  });

  it('parallel first calls right after the seed share the instance started ahead', async () => {
    const s = await seed(['mem_read_graph', 'mem_create_entities']);
    const replies = await Promise.all(
      Array.from({ length: 4 }, (_, i) => call(s.cookies, 'mem_create_entities', { entities: [{ name: `e${i}`, entityType: 'thing', observations: [] }] })),
    );
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(await pidsWith(marker(s.traceId))).toHaveLength(1);
    const graph = await call(s.cookies, 'mem_read_graph', {});
    expect((JSON.parse(graph.text) as { entities: { name: string }[] }).entities.map((e) => e.name).sort()).toEqual(['e0', 'e1', 'e2', 'e3']);
    expect(await pidsWith(marker(s.traceId))).toHaveLength(1);
    await getJson(srv, `/v1/rollouts/${s.traceId}`, 'DELETE');
    await until(async () => (await pidsWith(marker(s.traceId))).length === 0, 20_000, 'the ended rollout has no memory server');
  });

  it('a rollout ended while its sandbox is being built leaves no instance', async () => {
    const before = await running();
    const s = await seed(['mem_read_graph']);
    await getJson(srv, `/v1/rollouts/${s.traceId}`, 'DELETE');
    await until(async () => bridge.rolloutServers(s.traceId).length === 0 && (await pidsWith(marker(s.traceId))).length === 0 && (await running()) === before, 20_000, 'nothing left of the ended rollout');
  });

  it('a start ahead that fails is not the model\'s: the first call, sent at once, starts the instance and answers', async () => {
    const s = await seed(['flaky_read_graph']);
    const r = await call(s.cookies, 'flaky_read_graph', {});
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ entities: [], relations: [] });
    // the boot's probe, the start ahead (it failed), the call's own
    expect(readFileSync(join(counterDir, 'starts'), 'utf8')).toBe('3');
    expect(await pidsWith(marker(s.traceId))).toHaveLength(1);
    await getJson(srv, `/v1/rollouts/${s.traceId}`, 'DELETE');
    await until(async () => (await pidsWith(marker(s.traceId))).length === 0, 20_000, 'the ended rollout has no flaky server');
  });
});
