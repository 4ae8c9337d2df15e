// /mcp served to real MCP clients over Streamable HTTP: the SDK's 2.x client speaking 2026-07-28
// (no sessions) and 2025-11-25 (sessions), and the 1.x SDK client most agents use today. Every call
// goes through the same ledger as POST /tools: credentials, budget, record, exactly once.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhook } from '../../../src/authentication/webhooks.js';
import { META } from '../../../src/doors/mcp/server.js';
import { runs } from '../../fixtures/units/tools/echo.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { until } from '../../mcp/helpers.js';

const SECRET = `whsec_${Buffer.from('mcp-test-signing-secret-0123456789').toString('base64')}`;

type Mode = 'modern' | 'legacy';

interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

async function connect(srv: TestServer, mode: Mode, headers: Record<string, string> = {}): Promise<Connected> {
  const client = new Client({ name: 'serve-test', version: '1' }, { versionNegotiation: { mode: mode === 'modern' ? 'auto' : 'legacy' } });
  const transport = new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${srv.key}`, ...headers } },
  });
  await client.connect(transport);
  return { client, transport };
}

async function rollout(srv: TestServer, traceId: string): Promise<{ calls: { call_id: string; tool: string; status: string; output: string }[]; budget: { used: number; limit: number } }> {
  const r = await fetch(`${srv.url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${srv.key}` } });
  expect(r.status).toBe(200);
  return (await r.json()) as never;
}

describe('/mcp with the SDK clients', () => {
  let srv: TestServer;

  beforeAll(async () => {
    srv = await startTestServer({ toolsDir: join(repoRoot, 'test/fixtures/units/tools'), env: { RFT_SIGNING_SECRETS: SECRET, RFT_API_KEY_HEADERS: 'Authorization,X-Functions-Key' } });
  });
  afterAll(async () => srv?.close());

  it('refuses a JSON-RPC request id that would make an unfit call id (control character, lone surrogate), and records nothing', async () => {
    const traceId = `trace_${randomUUID()}`;
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
    const call = async (id: string | number) => {
      const res = await fetch(`${srv.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo', 'x-rft-trace-id': traceId },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, _meta: meta } }),
      });
      const text = await res.text();
      return JSON.parse(text.startsWith('{') ? text : text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1)) as { error?: { code: number }; result?: unknown };
    };
    for (const id of ['a\u0000b', 'bell\u0007', '\udbff']) expect((await call(id)).error?.code, JSON.stringify(id)).toBe(-32602);
    expect((await call(41)).result).toBeDefined();
    expect((await rollout(srv, traceId)).calls.map((c) => c.call_id)).toEqual(['mcp:41']);
  });

  for (const mode of ['modern', 'legacy'] as const) {
    describe(`${mode} protocol (${mode === 'modern' ? '2026-07-28' : '2025-11-25'})`, () => {
      it('negotiates the protocol generation it asked for', async () => {
        const { client, transport } = await connect(srv, mode);
        expect(transport.protocolVersion).toBe(mode === 'modern' ? '2026-07-28' : '2025-11-25');
        expect(transport.sessionId === undefined).toBe(mode === 'modern');
        await client.close();
      });

      it('lists every tool with its description and input JSON Schema', async () => {
        const { client } = await connect(srv, mode);
        const { tools } = await client.listTools();
        const echo = tools.find((t) => t.name === 'echo');
        expect(tools.map((t) => t.name).sort()).toEqual([...srv.app.rft.registry.tools.keys()].sort());
        expect(echo?.description).toBe('Echoes its text back.');
        expect(echo?.inputSchema).toMatchObject({ type: 'object', properties: { text: { type: 'string', description: 'what to echo' } }, required: ['text'] });
        await client.close();
      });

      it('runs a call through the ledger: recorded in the rollout named by x-rft-trace-id, budget spent', async () => {
        const traceId = `trace_${randomUUID()}`;
        const { client } = await connect(srv, mode, { 'x-rft-trace-id': traceId });
        const r = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
        expect(r).toMatchObject({ isError: false, content: [{ type: 'text', text: 'hello' }] });
        expect(r._meta?.[META.traceId]).toBe(traceId);
        const rec = await rollout(srv, traceId);
        expect(rec.calls).toMatchObject([{ tool: 'echo', status: 'ok', output: 'hello' }]);
        expect(rec.budget.used).toBe(1);
        await client.close();
      });

      it("answers a tool's failure as a result marked isError, and invalid arguments the same way", async () => {
        const { client } = await connect(srv, mode, { 'x-rft-trace-id': `trace_${randomUUID()}` });
        const failed = await client.callTool({ name: 'fail', arguments: {} });
        expect(failed).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Error: no such document: q3.pdf' }] });
        const invalid = await client.callTool({ name: 'echo', arguments: { text: 42 } });
        expect(invalid.isError).toBe(true);
        expect((invalid.content as { text: string }[])[0]?.text).toMatch(/invalid arguments for "echo": text/);
        await client.close();
      });

      it("applies the tool's timeout and output cap, as POST /tools does", async () => {
        const { client } = await connect(srv, mode, { 'x-rft-trace-id': `trace_${randomUUID()}` });
        const hung = await client.callTool({ name: 'hang', arguments: {} });
        expect(hung).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Error: tool "hang" timed out after 200 ms.' }] });
        const big = await client.callTool({ name: 'big', arguments: { bytes: 5000 } });
        const text = (big.content as { text: string }[])[0]?.text ?? '';
        expect(Buffer.byteLength(text)).toBeLessThanOrEqual(1024);
        expect(text).toMatch(/\[output truncated: 5000 bytes, showing the first 1024\]$/);
        await client.close();
      });

      it('answers an unknown tool with a protocol error naming the known ones', async () => {
        const { client } = await connect(srv, mode);
        await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({
          code: -32602,
          message: expect.stringContaining('unknown tool "no_such_tool"; known tools: big, echo'),
        });
        await client.close();
      });

      it('runs a call retried with the same idempotency key once', async () => {
        const traceId = `trace_${randomUUID()}`;
        const { client } = await connect(srv, mode, { 'x-rft-trace-id': traceId });
        const call = () => client.callTool({ name: 'echo', arguments: { text: 'once', delay_ms: 100 }, _meta: { [META.idempotencyKey]: 'key-1' } });
        const [a, b] = await Promise.all([call(), call()]);
        const c = await call();
        expect([a, b, c].map((r) => (r.content as { text: string }[])[0]?.text)).toEqual(['once', 'once', 'once']);
        expect([a, b, c].filter((r) => r._meta?.[META.replayed] === true)).toHaveLength(2);
        expect(runs.get(traceId)).toBe(1);
        const rec = await rollout(srv, traceId);
        expect(rec.calls).toMatchObject([{ call_id: 'key-1', status: 'ok' }]);
        expect(rec.budget.used).toBe(1);
        // The same key with other arguments is the caller's mistake, not a second call.
        await expect(client.callTool({ name: 'echo', arguments: { text: 'other' }, _meta: { [META.idempotencyKey]: 'key-1' } })).rejects.toMatchObject({
          code: -32602,
          message: expect.stringContaining('already used'),
        });
        await client.close();
      });

      it('refuses an idempotency key that POST /tools would refuse as a call_id, and records nothing', async () => {
        const traceId = `trace_${randomUUID()}`;
        const { client } = await connect(srv, mode, { 'x-rft-trace-id': traceId });
        for (const key of ['a\u0000b', 'tab\there', 'del\u007f', '\ud800x', 'x\udc00', 'k'.repeat(201), '', 7]) {
          await expect(client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: { [META.idempotencyKey]: key } }), JSON.stringify(key)).rejects.toMatchObject({ code: -32602 });
        }
        // A key made of a surrogate pair is a character, as in a call_id.
        await client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: { [META.idempotencyKey]: 'k-\ud83d\ude00' } });
        expect((await rollout(srv, traceId)).calls.map((c) => c.call_id)).toEqual(['k-\ud83d\ude00']);
        await client.close();
      });

      it('stops at the rollout budget from the dataset row in _meta', async () => {
        const traceId = `trace_${randomUUID()}`;
        const { client } = await connect(srv, mode, { 'x-rft-trace-id': traceId });
        const item = { tool_budget: 2 };
        const texts: string[] = [];
        for (let i = 0; i < 3; i++) {
          const r = await client.callTool({ name: 'echo', arguments: { text: `n${i}` }, _meta: { [META.item]: item } });
          texts.push((r.content as { text: string }[])[0]?.text ?? '');
        }
        expect(texts.slice(0, 2)).toEqual(['n0', 'n1']);
        expect(texts[2]).toMatch(/^Tool budget exhausted/);
        expect((await rollout(srv, traceId)).budget).toMatchObject({ used: 2, limit: 2 });
        await client.close();
      });
    });
  }

  it('runs a JSON-RPC request re-sent with the same id within a rollout once (no key needed)', async () => {
    const traceId = `trace_${randomUUID()}`;
    const headers = {
      authorization: `Bearer ${srv.key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      'x-rft-trace-id': traceId,
    };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'resent' } } });
    const answers = [];
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${srv.url}/mcp`, { method: 'POST', headers, body });
      expect(r.status).toBe(200);
      // Answered as one JSON body or as a server-sent event carrying it.
      const text = await r.text();
      const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '');
      answers.push((JSON.parse(json) as { result: { content: { text: string }[] } }).result.content[0]?.text);
    }
    expect(answers).toEqual(['resent', 'resent']);
    expect(runs.get(traceId)).toBe(1);
    expect((await rollout(srv, traceId)).calls).toMatchObject([{ call_id: 'mcp:7' }]);
  });

  it('gives a 2025 session its own rollout, ended with the session', async () => {
    const { client, transport } = await connect(srv, 'legacy');
    await client.callTool({ name: 'echo', arguments: { text: 'a' } });
    await client.callTool({ name: 'echo', arguments: { text: 'b' } });
    const traceId = `mcp-session-${transport.sessionId}`;
    expect((await rollout(srv, traceId)).calls.map((c) => c.output)).toEqual(['a', 'b']);
    await transport.terminateSession();
    await client.close();
  });

  it('records each call without a rollout under a trace of its own', async () => {
    const { client } = await connect(srv, 'modern');
    const a = await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    const b = await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    const traces = [a, b].map((r) => String(r._meta?.[META.traceId]));
    expect(traces[0]).toMatch(/^mcp-call-/);
    expect(traces[0]).not.toBe(traces[1]);
    for (const t of traces) expect((await rollout(srv, t)).calls).toHaveLength(1);
    await client.close();
  });

  it('refuses a client without credentials or with a wrong key, and runs nothing', async () => {
    for (const headers of [{}, { Authorization: 'Bearer wrong-key-0123456789abcdef' }]) {
      const client = new Client({ name: 'intruder', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers } });
      await expect(client.connect(transport)).rejects.toThrow(/401|Unauthorized|RFT_ERR_AUTH/);
    }
    const raw = await fetch(`${srv.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-rft-trace-id': 'trace_refused' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'no' } } }),
    });
    expect(raw.status).toBe(401);
    expect(((await raw.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_AUTH_MISSING');
    expect(runs.get('trace_refused')).toBeUndefined();
  });

  it('accepts the key in a key header (X-Functions-Key, as Azure Functions clients send it)', async () => {
    const traceId = `trace_${randomUUID()}`;
    const client = new Client({ name: 'azure', version: '1' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: { 'X-Functions-Key': srv.key, 'x-rft-trace-id': traceId } } }));
    expect((await client.callTool({ name: 'echo', arguments: { text: 'keyed' } })).content).toEqual([{ type: 'text', text: 'keyed' }]);
    await client.close();
  });

  it('accepts Standard Webhooks signatures, each request signed over its body', async () => {
    const traceId = `trace_${randomUUID()}`;
    const signing: typeof fetch = async (url, init) => {
      const body = typeof init?.body === 'string' ? init.body : '';
      const id = `msg_${randomUUID()}`;
      const ts = Math.floor(Date.now() / 1000);
      const headers = new Headers(init?.headers);
      headers.set('webhook-id', id);
      headers.set('webhook-timestamp', String(ts));
      headers.set('webhook-signature', signWebhook(SECRET, id, ts, body));
      return fetch(url, { ...init, headers });
    };
    const client = new Client({ name: 'signer', version: '1' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { fetch: signing, requestInit: { headers: { 'x-rft-trace-id': traceId } } }));
    expect((await client.callTool({ name: 'echo', arguments: { text: 'signed' } })).content).toEqual([{ type: 'text', text: 'signed' }]);
    await client.close();
  });

  it('serves the 1.x SDK client (2025-11-25 with a session)', async () => {
    const traceId = `trace_${randomUUID()}`;
    const client = new V1Client({ name: 'v1', version: '1' });
    const transport = new V1Transport(new URL(`${srv.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${srv.key}`, 'x-rft-trace-id': traceId } } });
    await client.connect(transport);
    expect(transport.sessionId).toBeTruthy();
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
    expect(await client.callTool({ name: 'echo', arguments: { text: 'v1' } })).toMatchObject({ content: [{ type: 'text', text: 'v1' }] });
    expect((await rollout(srv, traceId)).calls).toHaveLength(1);
    await transport.terminateSession();
    await client.close();
  });
});

describe('/mcp and sandbox tools', () => {
  let srv: TestServer;

  beforeAll(async () => {
    srv = await startTestServer({ env: { RFT_SANDBOX: 'process' } });
  });
  afterAll(async () => srv?.close());

  it('answers a sandbox tool called without a rollout with a tool error saying what to send', async () => {
    const { client } = await connect(srv, 'modern');
    const r = await client.callTool({ name: 'shell', arguments: { command: 'pwd' } });
    expect(r.isError).toBe(true);
    expect((r.content as { text: string }[])[0]?.text).toMatch(/send the header "x-rft-trace-id: <rollout id>"/);
    expect(srv.app.rft.sandboxes?.stats().created).toBe(0);
    await client.close();
  });

  it('runs it in the rollout named by the header, sharing its sandbox with POST /tools', async () => {
    const traceId = `trace_${randomUUID()}`;
    const { client } = await connect(srv, 'modern', { 'x-rft-trace-id': traceId });
    await client.callTool({ name: 'shell', arguments: { command: 'echo via-mcp > note.txt' } });
    const r = await fetch(`${srv.url}/tools`, {
      method: 'POST',
      headers: { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ call_id: 'c1', name: 'shell', arguments: JSON.stringify({ command: 'cat note.txt' }), trace_id: traceId }),
    });
    expect(((await r.json()) as { output: string }).output).toContain('via-mcp');
    await client.close();
  });

  it('ends the rollout of a 2025 session (its sandbox) when the session ends', async () => {
    const { client, transport } = await connect(srv, 'legacy');
    await client.callTool({ name: 'shell', arguments: { command: 'true' } });
    expect(srv.app.rft.sandboxes?.stats().live).toBeGreaterThanOrEqual(1);
    const before = srv.app.rft.sandboxes!.stats().live;
    await transport.terminateSession();
    await client.close();
    await until(() => srv.app.rft.sandboxes!.stats().live === before - 1);
  });
});

describe('/mcp 2025 sessions that go idle', () => {
  let srv: TestServer;

  beforeAll(async () => {
    // A TTL of 3 s, not 1 s: the session must outlive the gaps between the test's own first requests,
    // which a loaded machine can stretch past a second (the sweep then ended it before the tool call).
    srv = await startTestServer({ toolsDir: join(repoRoot, 'test/fixtures/units/tools'), env: { RFT_SANDBOX_TTL_MS: '3000' } });
  });
  afterAll(async () => srv?.close());

  it('ends a session idle past the TTL: its id is then unknown (404), and a new session works', async () => {
    const { client, transport } = await connect(srv, 'legacy');
    await client.callTool({ name: 'echo', arguments: { text: 'before' } });
    const id = transport.sessionId!;
    await client.close(); // leaves the session open on the server (no DELETE)
    const post = () =>
      fetch(`${srv.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${srv.key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': id,
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} }),
      });
    // Each look is a use of the session, so look seldom: the gaps are what lets it go idle.
    await until(async () => (await post()).status === 404, 25_000, 'the idle session expired', 5_000);
    const again = await connect(srv, 'legacy');
    expect((await again.client.callTool({ name: 'echo', arguments: { text: 'after' } })).content).toEqual([{ type: 'text', text: 'after' }]);
    await again.client.close();
  });
});

describe('/mcp tools/call when the sandbox is ours to blame (bwrap, one slot)', () => {
  let srv: TestServer;

  beforeAll(async () => {
    srv = await startTestServer({ env: { RFT_SANDBOX: 'bwrap', RFT_SANDBOX_CAP: '1', RFT_SANDBOX_QUEUE_TIMEOUT_MS: '300' } });
  });
  afterAll(async () => srv?.close());

  it('answers a queue timeout as a retryable protocol error with its RFT_ERR code, not an isError result, and records nothing', async () => {
    const post = (traceId: string, command: string) =>
      fetch(`${srv.url}/tools`, {
        method: 'POST',
        headers: { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ call_id: 'c1', name: 'shell', arguments: JSON.stringify({ command }), trace_id: traceId }),
      });
    expect((await post('holder', 'true')).status).toBe(200);
    const traceId = `trace_${randomUUID()}`;
    const { client } = await connect(srv, 'modern', { 'x-rft-trace-id': traceId });
    const call = () => client.callTool({ name: 'shell', arguments: { command: 'echo ran' }, _meta: { [META.idempotencyKey]: 'k1' } });
    await expect(call()).rejects.toMatchObject({
      code: -32603,
      data: { code: 'RFT_ERR_SANDBOX_QUEUE_TIMEOUT', status: 503, retryable: true },
    });
    expect((await rollout(srv, traceId)).calls).toEqual([]);
    // A slot frees: the retry with the same idempotency key runs the call.
    expect((await fetch(`${srv.url}/v1/rollouts/holder`, { method: 'DELETE', headers: { authorization: `Bearer ${srv.key}` } })).status).toBe(200);
    const r = await call();
    expect(r).toMatchObject({ isError: false, content: [{ type: 'text', text: expect.stringContaining('ran') }] });
    expect((await rollout(srv, traceId)).calls).toMatchObject([{ call_id: 'k1', status: 'ok' }]);
    await client.close();
  });
});
