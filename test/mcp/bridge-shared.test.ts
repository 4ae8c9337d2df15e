// Bridging at boot, and a `shared` server (one instance for the whole server), with the real
// @modelcontextprotocol/server-everything: its tools registered like native ones, results mapped,
// hung calls timed out, a crashed instance restarted. Plus a Streamable HTTP server bridged with
// per-rollout headers (another rft-endpoints' /mcp). No sandbox driver needed.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { untilCallStatus } from '../helpers/child-server.js';
import { callTool, getJson, pidsWith, serverEntry, writeMcpJson } from './helpers.js';

const FIXTURE_TOOLS = join(repoRoot, 'test/fixtures/units/tools');

describe('bridging at boot', () => {
  it('stops the boot naming both sources when a bridged tool takes a native tool name', async () => {
    const mcp = writeMcpJson({ everything: { command: 'node', args: [serverEntry('server-everything')], scope: 'shared', tools: ['echo'] } });
    const boot = startTestServer({ toolsDir: FIXTURE_TOOLS, env: { RFT_MCP_CONFIG: mcp } });
    await expect(boot).rejects.toMatchObject({
      code: 'RFT_ERR_UNIT_DUPLICATE',
      message: expect.stringMatching(/tool "echo" is defined twice: .*echo\.ts and .*mcpServers\.everything \(tool "echo"\)/),
    });
  });

  it('stops the boot with the stderr of a server that cannot start', async () => {
    const mcp = writeMcpJson({ broken: { command: 'node', args: ['/nonexistent/server.js'], scope: 'shared' } });
    await expect(startTestServer({ toolsDir: FIXTURE_TOOLS, env: { RFT_MCP_CONFIG: mcp } })).rejects.toMatchObject({
      code: 'RFT_ERR_MCP_START',
      message: expect.stringMatching(/MCP server "broken" could not start: exited with code 1; its stderr ends with:[\s\S]*Cannot find module '\/nonexistent\/server\.js'/),
    });
  });

  it('stops the boot when the allow-list names a tool the server does not have', async () => {
    const mcp = writeMcpJson({ everything: { command: 'node', args: [serverEntry('server-everything')], scope: 'shared', tools: ['echo', 'teleport'] } });
    await expect(startTestServer({ toolsDir: FIXTURE_TOOLS, env: { RFT_MCP_CONFIG: mcp } })).rejects.toMatchObject({
      code: 'RFT_ERR_MCP_CONFIG',
      message: expect.stringMatching(/the server has no tool "teleport"; it offers .*echo/),
    });
  });

  it('refuses a per-rollout server when sandboxes are off, saying what to change', async () => {
    const mcp = writeMcpJson({ everything: { command: 'node', args: [serverEntry('server-everything')] } });
    await expect(startTestServer({ toolsDir: FIXTURE_TOOLS, env: { RFT_MCP_CONFIG: mcp } })).rejects.toMatchObject({
      code: 'RFT_ERR_MCP_CONFIG',
      message: expect.stringContaining('"scope": "shared"'),
    });
  });
});

describe('a shared server (server-everything)', () => {
  let srv: TestServer;
  const marker = `shared-${randomUUID()}`;

  beforeAll(async () => {
    const mcp = writeMcpJson({
      everything: {
        command: 'node',
        // The extra argument only names the process for this test; the server ignores it.
        args: [serverEntry('server-everything'), 'stdio', marker],
        scope: 'shared',
        prefix: 'ev_',
        tools: ['echo', 'get-structured-content', 'get-tiny-image', 'trigger-long-running-operation', 'get-sum'],
        // Covers the whole call, a restart of the instance included (a few seconds on a loaded machine).
        timeoutMs: 8_000,
        maxOutputBytes: 256,
        cost: 2,
      },
    });
    srv = await startTestServer({ toolsDir: FIXTURE_TOOLS, env: { RFT_MCP_CONFIG: mcp } });
  });
  afterAll(async () => srv?.close());

  it('registers its tools like native ones: /v1/tools, /v1/job-config and /mcp', async () => {
    const names = ((await getJson(srv, '/v1/tools')).tools as { function: { name: string; parameters: unknown } }[]).map((t) => t.function);
    const sum = names.find((t) => t.name === 'ev_get-sum');
    expect(sum?.parameters).toMatchObject({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } });
    expect(names.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'ev_echo', 'ev_get-structured-content', 'ev_get-tiny-image']));
    const job = await getJson(srv, '/v1/job-config?base_url=https://rft.example.com');
    expect((job.tools as { name: string }[]).map((t) => t.name)).toContain('ev_echo');
    const client = new Client({ name: 't', version: '1' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${srv.key}` } } }));
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('ev_get-sum');
    // A bridged tool called over /mcp: both directions at once.
    expect((await client.callTool({ name: 'ev_echo', arguments: { message: 'round trip' } })).content).toEqual([{ type: 'text', text: 'Echo: round trip' }]);
    await client.close();
  });

  it('maps results to the output string: text, structured content, images described', async () => {
    const trace = `trace_${randomUUID()}`;
    expect((await callTool(srv, trace, 'ev_echo', { message: 'hi' })).output).toBe('Echo: hi');
    expect(JSON.parse((await callTool(srv, trace, 'ev_get-structured-content', { location: 'Chicago' })).output)).toEqual({ temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 });
    expect((await callTool(srv, trace, 'ev_get-tiny-image', {})).output).toMatch(/^Here's the image you requested:\n\[image: image\/png, \d+ bytes\]/);
    expect((await getJson(srv, `/v1/rollouts/${trace}`)).budget).toMatchObject({ used: 6 });
  });

  it('cuts a long result at the output cap, with the usual marker', async () => {
    const out = (await callTool(srv, `trace_${randomUUID()}`, 'ev_echo', { message: 'y'.repeat(2000) })).output;
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(256);
    expect(out).toMatch(/^Echo: y+\n\[output truncated: 2006 bytes, showing the first 256\]$/);
  });

  it("answers the server's refusal of bad arguments as a tool error the model reads", async () => {
    const r = await callTool(srv, `trace_${randomUUID()}`, 'ev_get-sum', { a: 'one', b: 2 });
    expect(r.status).toBe(200);
    expect(r.output).toMatch(/^Error: .*(Invalid|invalid|expected number)/);
  });

  it('times out a hung call and keeps the instance for the next one', async () => {
    const trace = `trace_${randomUUID()}`;
    const hung = await callTool(srv, trace, 'ev_trigger-long-running-operation', { duration: 120, steps: 1 });
    expect(hung.output).toBe('Error: tool "ev_trigger-long-running-operation" timed out after 8000 ms.');
    expect((await callTool(srv, trace, 'ev_echo', { message: 'after' })).output).toBe('Echo: after');
    const rec = await getJson(srv, `/v1/rollouts/${trace}`);
    expect((rec.calls as { status: string }[]).map((c) => c.status)).toEqual(['timeout', 'ok']);
  });

  it('answers a tool error when the instance dies mid-call, and restarts it for the next call', async () => {
    const trace = `trace_${randomUUID()}`;
    const [pid] = await pidsWith(marker);
    expect(pid).toBeGreaterThan(0);
    // Killed once the call is under way (its start is recorded, and the handler runs right after)
    // and long before it would end: after a fixed 300 ms, a loaded machine could kill before the
    // call began or after a 1-s operation had already ended.
    const slow = callTool(srv, trace, 'ev_trigger-long-running-operation', { duration: 5, steps: 1 }, 'call_killed');
    await untilCallStatus(srv.url, srv.key, trace, 'call_killed', 'running');
    process.kill(pid!, 'SIGKILL');
    const crashed = await slow;
    expect(crashed.status).toBe(200);
    expect(crashed.output).toMatch(/^Error: MCP server "everything" was killed \(SIGKILL\) during this call; it is restarted on the next call\./);
    expect((await callTool(srv, trace, 'ev_echo', { message: 'back' })).output).toBe('Echo: back');
    const [next] = await pidsWith(marker);
    expect(next).toBeGreaterThan(0);
    expect(next).not.toBe(pid);
  });

  it('runs each (trace_id, call_id) once, replaying the recorded output to a retry', async () => {
    const trace = `trace_${randomUUID()}`;
    const [a, b] = await Promise.all([callTool(srv, trace, 'ev_echo', { message: 'once' }, 'call_same'), callTool(srv, trace, 'ev_echo', { message: 'once' }, 'call_same')]);
    expect([a.output, b.output]).toEqual(['Echo: once', 'Echo: once']);
    const rec = await getJson(srv, `/v1/rollouts/${trace}`);
    expect(rec.calls as unknown[]).toHaveLength(1);
    expect(rec.budget).toMatchObject({ used: 2 });
  });
});

describe('a Streamable HTTP server bridged per rollout (another rft-endpoints /mcp)', () => {
  let upstream: TestServer;
  let srv: TestServer;

  beforeAll(async () => {
    upstream = await startTestServer({ toolsDir: FIXTURE_TOOLS });
    const mcp = writeMcpJson({
      upstream: {
        url: `${upstream.url}/mcp`,
        headers: { Authorization: `Bearer ${upstream.key}`, 'x-rft-trace-id': 'up-${RFT_TRACE_ID}' },
        prefix: 'up_',
        tools: ['echo'],
      },
    });
    srv = await startTestServer({ toolsDir: join(repoRoot, 'tools'), env: { RFT_MCP_CONFIG: mcp, RFT_SANDBOX: 'process' } });
  });
  afterAll(async () => {
    await srv?.close();
    await upstream?.close();
  });

  it('sends each rollout its own expanded headers: the upstream records the call under that rollout', async () => {
    const trace = `trace_${randomUUID()}`;
    expect((await callTool(srv, trace, 'up_echo', { text: 'through' })).output).toBe('through');
    const rec = await getJson(upstream, `/v1/rollouts/up-${trace}`);
    expect(rec.calls).toMatchObject([{ tool: 'echo', output: 'through' }]);
  });
});
