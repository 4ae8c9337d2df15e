import { afterAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { fixtureGraders, fixtureTools, functionCall, newTrace } from '../helpers/fixtures.js';
import { gate, postToolCall, spawnServer, untilCallStatus } from '../helpers/child-server.js';

const KEY = 'restart-test-key-0123456789';
const dataDir = mkdtempSync(join(tmpdir(), 'rft-restart-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const baseEnv = { RFT_API_KEYS: `t:${KEY}`, RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders };
const env = { ...baseEnv, RFT_DATA_DIR: dataDir };

const post = (url: string, body: unknown) => postToolCall(url, KEY, body);


describe('durability across kill -9', () => {
  it('keeps every acknowledged call and marks the in-flight one interrupted, never running it again', async () => {
    const env = { ...baseEnv, RFT_DATA_DIR: mkdtempSync(join(dataDir, 'kill-')) };
    const server = await spawnServer(env);
    const trace = newTrace();
    const calls = Array.from({ length: 40 }, (_, i) => functionCall('echo', { text: `ack-${i}` }, { trace_id: trace }));
    const acked = await Promise.all(calls.map((c) => post(server.url, c)));
    expect(acked.every((r) => r.status === 200)).toBe(true);

    const inflight = functionCall('echo', { text: 'never finishes', wait_for: gate().path }, { trace_id: trace });
    const pending = post(server.url, inflight).catch((e: Error) => e);
    await untilCallStatus(server.url, KEY, trace, inflight.call_id, 'running');
    await server.stop('SIGKILL');
    expect(await pending).toBeInstanceOf(Error);

    const again = await spawnServer(env);
    try {
      const rec = await request(`${again.url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${KEY}` } });
      const body = (await rec.body.json()) as { calls: { call_id: string; output: string; status: string }[] };
      for (const [i, c] of calls.entries()) {
        expect(body.calls.find((x) => x.call_id === c.call_id)).toMatchObject({ status: 'ok', output: `ack-${i}` });
      }
      expect(body.calls.find((x) => x.call_id === inflight.call_id)?.status).toBe('interrupted');
      expect(again.stdout()).toMatch(/"interrupted":1,.*marked interrupted/);

      const retry = await post(again.url, inflight);
      expect(retry.status).toBe(200);
      expect(retry.body.output).toMatch(/interrupted by a server restart/);
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
