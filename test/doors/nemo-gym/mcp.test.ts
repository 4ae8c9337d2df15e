// The NeMo Gym door's /mcp (Gym's expose_tools_over_mcp, nemo_gym/mcp_auto_exposure.py): the seed
// reply names it with a session token header, and an MCP client sending that header calls tools in
// that session's rollout, next to its HTTP calls, with the same record, budget and grade. Driven by
// the SDK's client speaking 2025-11-25 (the Python SDK's generation, which Gym's agents use).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_TOKEN_HEADER, SESSION_COOKIE } from '../../../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../../../src/doors/nemo-gym/sessions.js';
import { toGymRow } from '../../../src/cli/dataset/nemo-gym-row.js';
import { META } from '../../../src/doors/mcp/server.js';
import { postOnce, type Cookies } from '../../helpers/nemo-gym-client.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';

type Row = Record<string, unknown>;
const finqa = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);

interface Seeded {
  row: Record<string, unknown>;
  cookies: Cookies;
  mcp: { server_name: string; url_path: string; transport: string; headers: Record<string, string> };
}

describe('NeMo Gym door /mcp', () => {
  let server: TestServer;
  let door: string;
  const clients: Client[] = [];
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_NEMO_GYM_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
    door = server.app.rft.nemoGym!.url;
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await server?.close();
  });

  const seed = async (i: number): Promise<Seeded> => {
    const row = toGymRow(finqa[i]!) as Record<string, unknown>;
    const r = await postOnce(door, '/seed_session', row);
    expect(r.status).toBe(200);
    return { row, cookies: r.cookies, mcp: (JSON.parse(r.text) as { mcp: Seeded['mcp'] }).mcp };
  };
  const connect = async (headers: Record<string, string>): Promise<Client> => {
    const client = new Client({ name: 'gym-mcp-test', version: '1' }, { versionNegotiation: { mode: 'legacy' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${door}/mcp`), { requestInit: { headers } }));
    clients.push(client);
    return client;
  };
  const record = async (cookies: Cookies) => {
    const res = await fetch(`${server.url}/v1/rollouts/${traceIdOf(cookies[SESSION_COOKIE]!)}`, { headers: { authorization: `Bearer ${server.key}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as { door: string; calls: { call_id: string; tool: string; status: string; output: string }[] };
  };
  const errorOf = async (p: Promise<unknown>): Promise<{ code: number; data: { code: string; retryable?: boolean } }> => {
    const e = (await p.then(
      () => undefined,
      (err: unknown) => err,
    )) as { code: number; data: { code: string; retryable?: boolean } } | undefined;
    expect(e).toBeDefined();
    return e!;
  };

  it('the seed reply names /mcp with the session token, and a call there joins the HTTP calls of the rollout that /verify grades', async () => {
    const s = await seed(0);
    expect(s.mcp).toMatchObject({ url_path: '/mcp', transport: 'http' });
    expect(typeof s.mcp.headers[MCP_TOKEN_HEADER]).toBe('string');
    const http = await postOnce(door, '/list_docs', {}, { cookies: s.cookies });
    expect(http.status).toBe(200);

    const client = await connect(s.mcp.headers);
    const listed = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(listed).toEqual([...(s.row.responses_create_params as { tools: { name: string }[] }).tools.map((t) => t.name)].sort());
    const key = { [META.idempotencyKey]: 'gym-mcp-1' };
    const first = await client.callTool({ name: 'list_docs', arguments: {}, _meta: key });
    expect(first.isError).toBe(false);
    expect(first._meta?.[META.traceId]).toBe(traceIdOf(s.cookies[SESSION_COOKIE]!));
    // a retry with the same key is answered from the ledger
    const again = await client.callTool({ name: 'list_docs', arguments: {}, _meta: key });
    expect(again._meta?.[META.replayed]).toBe(true);
    expect(again.content).toEqual(first.content);
    // another call without a key runs (its request id and arguments make its key)
    const search = await client.callTool({ name: 'search_docs', arguments: { query: 'revenue' } });
    expect(search.isError).toBe(false);

    const rec = await record(s.cookies);
    expect(rec.door).toBe('nemo-gym');
    expect(rec.calls.map((c) => c.tool)).toEqual(['list_docs', 'list_docs', 'search_docs']);
    expect(rec.calls[0]!.output).toBe(http.text);
    expect(rec.calls[1]!.call_id).toBe('gym-mcp-1');

    const text = `Answer: ${String(finqa[0]!.reference_answer)}`;
    // the episode lists the call made over HTTP (/verify checks every served one is there); MCP calls are not checked
    const httpCall = [
      { type: 'function_call', call_id: 'c1', name: 'list_docs', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: http.text },
    ];
    const response = { id: 'resp_1', output: [...httpCall, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }] };
    const verify = await postOnce(door, '/verify', { ...s.row, response }, { cookies: s.cookies });
    expect(verify.status).toBe(200);
    expect((JSON.parse(verify.text) as { reward: number }).reward).toBe(1);
  });

  it("a session's token reaches only its own rollout, and only its row's tools", async () => {
    const a = await seed(1);
    const b = await seed(2);
    const asB = await connect(b.mcp.headers);
    await asB.callTool({ name: 'list_docs', arguments: {}, _meta: { [META.idempotencyKey]: 'same-key' } });
    const asA = await connect(a.mcp.headers);
    const r = await asA.callTool({ name: 'search_docs', arguments: { query: 'cash' }, _meta: { [META.idempotencyKey]: 'same-key' } });
    expect(r._meta?.[META.replayed]).toBe(false);
    expect((await record(a.cookies)).calls.map((c) => c.tool)).toEqual(['search_docs']);
    expect((await record(b.cookies)).calls.map((c) => c.tool)).toEqual(['list_docs']);
    // a tool of the server that this row does not offer is neither listed nor callable
    const registered = [...server.app.rft.registry.tools.keys()];
    const other = registered.find((t) => !(a.row.responses_create_params as { tools: { name: string }[] }).tools.some((x) => x.name === t));
    expect(other).toBeDefined();
    const e = await errorOf(asA.callTool({ name: other!, arguments: {} }));
    expect(e.data.code).toBe('RFT_ERR_UNKNOWN_TOOL');
    expect((await record(a.cookies)).calls).toHaveLength(1);
  });

  it('no token is a protocol error; an unknown token is our lost session, retryable', async () => {
    const none = await connect({});
    expect((await none.listTools()).tools).toEqual([]);
    const missing = await errorOf(none.callTool({ name: 'list_docs', arguments: {} }));
    expect(missing.data.code).toBe('RFT_ERR_NEMO_GYM_SESSION');
    expect(missing.data.retryable).toBe(false);
    const unknown = await connect({ [MCP_TOKEN_HEADER]: 'not-a-session-of-this-process' });
    const lost = await errorOf(unknown.callTool({ name: 'list_docs', arguments: {} }));
    expect(lost.code).toBe(-32603);
    expect(lost.data.code).toBe('RFT_ERR_NEMO_GYM_SESSION_LOST');
    expect(lost.data.retryable).toBe(true);
  });

  it('answers a stateless 2025 request in plain JSON, as Gym serves it (json_response, stateless)', async () => {
    const s = await seed(4);
    const res = await fetch(`${door}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', ...s.mcp.headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_docs', arguments: {} } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const body = (await res.json()) as { id: number; result: { isError: boolean } };
    expect(body).toMatchObject({ id: 7, result: { isError: false } });
    expect((await record(s.cookies)).calls.map((c) => c.tool)).toEqual(['list_docs']);
    // no server-sent stream and no session to end: 405, as the stateless transport answers
    for (const method of ['GET', 'DELETE']) expect((await fetch(`${door}/mcp`, { method, headers: s.mcp.headers })).status).toBe(405);
  });

  it('RFT_NEMO_GYM_MCP=0 leaves the seed reply empty and /mcp unserved', async () => {
    const off = await startTestServer({ env: { RFT_NEMO_GYM_PORT: '0', RFT_NEMO_GYM_MCP: '0' } });
    try {
      const url = off.app.rft.nemoGym!.url;
      const r = await postOnce(url, '/seed_session', toGymRow(finqa[3]!));
      expect(JSON.parse(r.text)).toEqual({});
      const mcp = await postOnce(url, '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { cookies: r.cookies });
      expect(mcp.status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
