import { afterAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { META } from '../../src/doors/mcp/server.js';
import { fixtureGraders, fixtureTools, functionCall, newTrace } from '../helpers/fixtures.js';
import { gate, postToolCall, spawnServer, untilCallStatus } from '../helpers/child-server.js';

const KEY = 'restart-test-key-0123456789';
const dataDir = mkdtempSync(join(tmpdir(), 'rft-restart-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const baseEnv = { RFT_API_KEYS: `t:${KEY}`, RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders };
const env = { ...baseEnv, RFT_DATA_DIR: dataDir };

const post = (url: string, body: unknown) => postToolCall(url, KEY, body);

async function postRaw(url: string, body: unknown): Promise<{ status: number; body: { output?: string; error?: { code: string } } }> {
  const res = await request(`${url}/tools`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.statusCode, body: (await res.body.json()) as never };
}

async function rollout(url: string, trace: string): Promise<{ budget: { used: number }; calls: { call_id: string; output: string; status: string }[] }> {
  const res = await request(`${url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${KEY}` } });
  return (await res.body.json()) as never;
}

/** An MCP client (2026-07-28, no session) whose calls belong to the rollout `trace`. */
async function mcpClient(url: string, trace: string): Promise<Client> {
  const client = new Client({ name: 'restart-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${KEY}`, 'x-rft-trace-id': trace } } }));
  return client;
}


describe('durability across kill -9', () => {
  it('keeps every acknowledged call; a call the kill cut is never run again, shown to the model or charged, on /tools and /mcp', async () => {
    const env = { ...baseEnv, RFT_DATA_DIR: mkdtempSync(join(dataDir, 'kill-')) };
    const server = await spawnServer(env);
    const trace = newTrace();
    const calls = Array.from({ length: 40 }, (_, i) => functionCall('echo', { text: `ack-${i}` }, { trace_id: trace }));
    const acked = await Promise.all(calls.map((c) => post(server.url, c)));
    expect(acked.every((r) => r.status === 200)).toBe(true);

    const never = gate().path;
    const inflight = functionCall('echo', { text: 'never finishes', wait_for: never }, { trace_id: trace });
    // An idempotent tool's cut call runs again on its retry instead.
    const reading = functionCall('peek', { key: 'k', wait_for: never }, { trace_id: trace });
    const mcp = await mcpClient(server.url, trace);
    const pending = [
      post(server.url, inflight).catch((e: Error) => e),
      post(server.url, reading).catch((e: Error) => e),
      mcp.callTool({ name: 'echo', arguments: { text: 'cut over mcp', wait_for: never }, _meta: { [META.idempotencyKey]: 'mcp-key' } }).catch((e: Error) => e),
    ];
    for (const id of [inflight.call_id, reading.call_id, 'mcp-key']) await untilCallStatus(server.url, KEY, trace, id, 'running');
    await server.stop('SIGKILL');
    for (const p of pending) expect(await p).toBeInstanceOf(Error);

    const again = await spawnServer(env);
    try {
      const body = await rollout(again.url, trace);
      for (const [i, c] of calls.entries()) {
        expect(body.calls.find((x) => x.call_id === c.call_id)).toMatchObject({ status: 'ok', output: `ack-${i}` });
      }
      expect(body.calls.find((x) => x.call_id === inflight.call_id)?.status).toBe('interrupted');
      expect(body.calls.find((x) => x.call_id === 'mcp-key')?.status).toBe('interrupted');
      expect(body.calls.find((x) => x.call_id === reading.call_id)).toBeUndefined();
      // Charged for the 40 acknowledged calls only.
      expect(body.budget.used).toBe(40);
      expect(again.stdout()).toMatch(/"interrupted":2,.*marked interrupted/);

      // Every retry of the cut call answers a retryable 5xx (the trainer drops the rollout), never an output.
      for (let attempt = 0; attempt < 2; attempt++) {
        const retry = await postRaw(again.url, inflight);
        expect(retry.status).toBe(503);
        expect(retry.body.error?.code).toBe('RFT_ERR_CALL_INTERRUPTED');
      }
      const client = await mcpClient(again.url, trace);
      await expect(client.callTool({ name: 'echo', arguments: { text: 'cut over mcp', wait_for: never }, _meta: { [META.idempotencyKey]: 'mcp-key' } })).rejects.toMatchObject({
        data: { code: 'RFT_ERR_CALL_INTERRUPTED', status: 503, retryable: true },
      });
      await client.close();
      // The idempotent call runs again, and is charged once.
      const reread = await post(again.url, functionCall('peek', { key: 'k' }, { trace_id: trace, call_id: reading.call_id }));
      expect(reread).toMatchObject({ status: 200, body: { output: 'value of k' } });
      const after = await rollout(again.url, trace);
      expect(after.calls.find((x) => x.call_id === reading.call_id)).toMatchObject({ status: 'ok', output: 'value of k' });
      expect(after.budget.used).toBe(41);
      expect(after.calls.filter((x) => x.status === 'interrupted').every((x) => !/ack-|value of/.test(x.output))).toBe(true);
    } finally {
      await again.stop();
    }
  }, 60_000);
});

describe('graceful shutdown', () => {
  it('lets a running call finish and record on SIGTERM, then exits 0', async () => {
    const server = await spawnServer(env);
    const finish = gate();
    const call = functionCall('echo', { text: 'finished', wait_for: finish.path }, { trace_id: newTrace() });
    const pending = post(server.url, call);
    await untilCallStatus(server.url, KEY, call.trace_id, call.call_id, 'running');
    const exited = server.stop('SIGTERM');
    // The call may finish only once the server is shutting down: it no longer takes connections.
    await vi.waitFor(() => expect(request(`${server.url}/healthz`).then((r) => r.body.dump())).rejects.toThrow(), { timeout: 20_000, interval: 20 });
    finish.open();
    const reply = await pending;
    expect(reply).toMatchObject({ status: 200, body: { output: 'finished' } });
    expect(await exited).toBe(0);
    const again = await spawnServer(env);
    try {
      const rec = await request(`${again.url}/v1/rollouts/${call.trace_id}`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(((await rec.body.json()) as { calls: { status: string }[] }).calls[0]!.status).toBe('ok');
    } finally {
      await again.stop();
    }
  }, 60_000);
});
