// The sandbox manager as the server uses it: a rollout's tool calls over real HTTP share one bwrap
// sandbox built from the row, and DELETE /v1/rollouts/:trace_id removes it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { describeIf } from '../helpers/require.js';
import { driversPresent } from './helpers.js';

const present = await driversPresent();

describeIf(present.bwrap, 'sandboxes over HTTP', 'bubblewrap not available')('sandboxes over HTTP (bwrap)', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startTestServer({ env: { RFT_SANDBOX: 'bwrap', RFT_SANDBOX_CAP: '16' } });
  });
  afterAll(() => srv?.close());

  async function shell(traceId: string, callId: string, command: string, item: Record<string, unknown> = {}): Promise<{ status: number; output: string }> {
    const res = await request(`${srv.url}/tools`, {
      method: 'POST',
      headers: { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'function_call', call_id: callId, name: 'shell', arguments: JSON.stringify({ command }), trace_id: traceId, item }),
    });
    const body = (await res.body.json()) as { output?: string };
    return { status: res.statusCode, output: body.output ?? '' };
  }

  it("builds the rollout's workspace from the row and keeps it across its calls", async () => {
    const item = { sandbox: { files: { 'hello.txt': 'hi from the row' } } };
    const a = await shell('trace_http_1', 'c1', 'cat hello.txt; echo more >> hello.txt', item);
    expect(a.status).toBe(200);
    expect(a.output).toContain('hi from the row');
    const b = await shell('trace_http_1', 'c2', 'cat hello.txt', item);
    expect(b.output).toContain('more');
  });

  it('creates one sandbox for parallel first calls of a rollout', async () => {
    const before = srv.app.rft.sandboxes?.stats().created ?? 0;
    const outs = await Promise.all(['c1', 'c2', 'c3', 'c4'].map((c) => shell('trace_http_2', c, 'mktemp /workspace/id-XXXXXX >/dev/null; ls /workspace | wc -l')));
    expect(outs.every((o) => o.status === 200)).toBe(true);
    expect((srv.app.rft.sandboxes?.stats().created ?? 0) - before).toBe(1);
    expect(outs.map((o) => /stdout ---\n(\d+)/.exec(o.output)?.[1]).sort()).toEqual(['1', '2', '3', '4']);
  });

  it('gives different rollouts different workspaces', async () => {
    await shell('trace_http_3', 'c1', 'echo mine > only-here.txt');
    const other = await shell('trace_http_4', 'c1', 'ls');
    expect(other.output).not.toContain('only-here.txt');
  });

  it('removes the sandbox on DELETE /v1/rollouts/:trace_id', async () => {
    await shell('trace_http_5', 'c1', 'echo x > x');
    const live = srv.app.rft.sandboxes?.stats().live ?? 0;
    const res = await request(`${srv.url}/v1/rollouts/trace_http_5`, { method: 'DELETE', headers: { authorization: `Bearer ${srv.key}` } });
    await res.body.text();
    expect(res.statusCode).toBeLessThan(300);
    expect(srv.app.rft.sandboxes?.stats().live).toBe(live - 1);
  });
});
