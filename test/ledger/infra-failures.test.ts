// Infrastructure failures are never charged to the model (issue 10, item 4): a tool call whose
// handler fails on our side (no sandbox slot within the queue timeout, a sandbox that cannot be
// created) answers a 5xx with Retry-After, records nothing, charges nothing, and the trainer's
// retry with the same call_id runs the call. Real HTTP against the built app, on SQLite and
// Postgres, with the bubblewrap driver.
import { afterAll, expect, it, onTestFinished } from 'vitest';
import { request } from 'undici';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { describeIf } from '../helpers/require.js';
import { databaseUrl, dropSchema, postgresUnavailable, randomSchema } from '../store/postgres-db.js';
import { gate, untilCallStatus } from '../helpers/child-server.js';
import { startPgProxy } from '../store/postgres-proxy.js';
import { driverCases } from '../helpers/sandboxes.js';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { instanceIdFor } from '../../src/sandbox/from-config.js';

const pgUnavailable = await postgresUnavailable();
const schemas: string[] = [];
afterAll(async () => {
  for (const s of schemas) await dropSchema(s);
});

interface Reply {
  status: number;
  retryAfter: string | undefined;
  body: { output?: string; error?: { code: string } };
}

async function call(s: TestServer, traceId: string, callId: string, command: string, item: Record<string, unknown> = {}, tool = 'shell'): Promise<Reply> {
  const res = await request(`${s.url}/tools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'function_call', name: tool, call_id: callId, trace_id: traceId, arguments: JSON.stringify({ command }), item }),
  });
  const h = res.headers['retry-after'];
  return { status: res.statusCode, retryAfter: Array.isArray(h) ? h[0] : h, body: (await res.body.json()) as Reply['body'] };
}

async function rollout(s: TestServer, traceId: string): Promise<{ status: number; calls: { call_id: string; status: string; output: string | null }[]; budget?: { used: number; limit: number } }> {
  const res = await request(`${s.url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${s.key}` } });
  const body = (await res.body.json()) as { calls?: never[]; budget?: { used: number; limit: number } };
  return { status: res.statusCode, calls: body.calls ?? [], ...(body.budget ? { budget: body.budget } : {}) };
}

async function endRollout(s: TestServer, traceId: string): Promise<void> {
  const res = await request(`${s.url}/v1/rollouts/${traceId}`, { method: 'DELETE', headers: { authorization: `Bearer ${s.key}` } });
  expect(res.statusCode).toBe(200);
  await res.body.dump();
}

async function metric(s: TestServer, line: RegExp): Promise<number> {
  const res = await request(`${s.url}/metrics`, { headers: { authorization: `Bearer ${s.key}` } });
  const text = await res.body.text();
  const m = text.split('\n').find((l) => line.test(l));
  return m ? Number(m.split(' ').pop()) : 0;
}

const stores: { label: string; available: boolean; why: string; env: () => Record<string, string> }[] = [
  { label: 'SQLite', available: true, why: '', env: () => ({}) },
  {
    label: 'Postgres',
    available: pgUnavailable === undefined,
    why: pgUnavailable ?? '',
    env: () => {
      const schema = randomSchema();
      schemas.push(schema);
      return { RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: schema };
    },
  },
];

const bwrap = driverCases.find((d) => d.name === 'bwrap')!;

for (const st of stores) {
  describeIf(st.available && bwrap.available, st.available ? 'bubblewrap' : 'Postgres', st.available ? bwrap.reason : st.why)(`queue timeouts on ${st.label} (bwrap)`, () => {
    /** One sandbox at most, a queue wait of 400 ms: rollout "holder" keeps the only slot until it is ended. */
    async function server(): Promise<TestServer> {
      const s = await startTestServer({
        env: { RFT_SANDBOX: 'bwrap', RFT_SANDBOX_CAP: '1', RFT_SANDBOX_QUEUE_TIMEOUT_MS: '400', ...st.env() },
      });
      onTestFinished(() => s.close());
      return s;
    }

    it('answers 503 with Retry-After, records and charges nothing, and the retry with the same call_id runs once a slot frees', async () => {
      const s = await server();
      expect((await call(s, 'holder', 'h1', 'echo held')).status).toBe(200);
      const infraBefore = await metric(s, /^rft_failures_total\{kind="infra",where="sandbox"\}/);

      const r = await call(s, 'starved', 'c1', 'echo ran', { tool_budget: 1 });
      expect(r.status).toBe(503);
      expect(r.body.error?.code).toBe('RFT_ERR_SANDBOX_QUEUE_TIMEOUT');
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      const rec = await rollout(s, 'starved');
      expect(rec.calls).toEqual([]);
      expect(rec.budget).toMatchObject({ used: 0, limit: 1 });
      // Counted once as an infra failure, never as a recorded tool call outcome.
      expect(await metric(s, /^rft_failures_total\{kind="infra",where="sandbox"\}/)).toBe(infraBefore + 1);
      expect(await metric(s, /^rft_tool_calls_total\{tool="shell",outcome="tool_error"\}/)).toBe(0);

      // Still no slot: the retry times out the same way, still uncharged.
      expect((await call(s, 'starved', 'c1', 'echo ran', { tool_budget: 1 })).status).toBe(503);
      await endRollout(s, 'holder');
      const ok = await call(s, 'starved', 'c1', 'echo ran', { tool_budget: 1 });
      expect(ok.status).toBe(200);
      expect(ok.body.output).toContain('ran');
      const after = await rollout(s, 'starved');
      expect(after.calls.map((c) => [c.call_id, c.status])).toEqual([['c1', 'ok']]);
      expect(after.budget).toMatchObject({ used: 1, limit: 1 });
      // Its one unit is spent by the call that ran: a second call is told so.
      expect((await call(s, 'starved', 'c2', 'echo more', { tool_budget: 1 })).body.output).toMatch(/budget exhausted/i);
    });

    it('answers every parallel duplicate of an un-begun call with the 503, and the retries run it once', async () => {
      const s = await server();
      expect((await call(s, 'holder', 'h1', 'echo held')).status).toBe(200);
      const dups = await Promise.all(Array.from({ length: 6 }, () => call(s, 'dup', 'same', 'echo once >> runs; cat runs', { tool_budget: 1 })));
      expect(dups.map((d) => [d.status, d.body.error?.code])).toEqual(Array(6).fill([503, 'RFT_ERR_SANDBOX_QUEUE_TIMEOUT']));
      expect(dups.every((d) => d.retryAfter !== undefined)).toBe(true);
      expect((await rollout(s, 'dup')).calls).toEqual([]);

      await endRollout(s, 'holder');
      const retries = await Promise.all(Array.from({ length: 6 }, () => call(s, 'dup', 'same', 'echo once >> runs; cat runs', { tool_budget: 1 })));
      expect(retries.map((d) => d.status)).toEqual(Array(6).fill(200));
      // The command ran once: every reply shows one line, the recorded one.
      for (const d of retries) expect(d.body.output?.match(/^once$/gm)).toHaveLength(1);
      const rec = await rollout(s, 'dup');
      expect(rec.calls.map((c) => c.status)).toEqual(['ok']);
      expect(rec.budget).toMatchObject({ used: 1 });
    });
  });
}

describeIf(bwrap.available, 'bubblewrap', bwrap.reason)("a tool's timeout while it waits for a sandbox slot (bwrap)", () => {
  it("does not count the wait: a call that waited past its tool's timeout for a slot still runs, charged once", async () => {
    const s = await startTestServer({
      toolsDir: join(repoRoot, 'test/fixtures/units/infra-tools'),
      env: { RFT_SANDBOX: 'bwrap', RFT_SANDBOX_CAP: '1', RFT_SANDBOX_QUEUE_TIMEOUT_MS: '60000' },
    });
    onTestFinished(() => s.close());
    expect((await call(s, 'holder', 'c1', 'echo held', {}, 'quick_shell')).status).toBe(200);
    const waiting = call(s, 'waits', 'c1', 'echo ran', { tool_budget: 1 }, 'quick_shell');
    await untilCallStatus(s.url, s.key, 'waits', 'c1', 'running');
    // Longer than quick_shell's own timeout (3 s) in the queue: before, the tool timed out here.
    await new Promise((r) => setTimeout(r, 3_500));
    await endRollout(s, 'holder');
    const r = await waiting;
    expect([r.status, r.body.output]).toEqual([200, 'ran\n']);
    const rec = await rollout(s, 'waits');
    expect(rec.calls.map((c) => c.status)).toEqual(['ok']);
    expect(rec.budget).toMatchObject({ used: 1, limit: 1 });
  });
});

describeIf(pgUnavailable === undefined && bwrap.available, 'Postgres and bubblewrap', pgUnavailable ?? bwrap.reason)('un-begun calls across replicas (Postgres, bwrap)', () => {
  it("a replica waiting on a call that the other un-begins answers 503 RFT_ERR_CALL_NOT_RUN, never a replay of a row that is gone", async () => {
    const schema = randomSchema();
    schemas.push(schema);
    const env = { RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: schema, RFT_SANDBOX: 'bwrap' };
    const a = await startTestServer({ env: { ...env, RFT_SANDBOX_CAP: '1', RFT_SANDBOX_QUEUE_TIMEOUT_MS: '5000' } });
    onTestFinished(() => a.close());
    const b = await startTestServer({ env });
    onTestFinished(() => b.close());
    expect((await call(a, 'holder', 'h1', 'echo held')).status).toBe(200);

    const first = call(a, 'shared', 'c1', 'echo ran');
    await untilCallStatus(a.url, a.key, 'shared', 'c1', 'running');
    const second = await call(b, 'shared', 'c1', 'echo ran');
    expect([second.status, second.body.error?.code]).toEqual([503, 'RFT_ERR_CALL_NOT_RUN']);
    expect(second.retryAfter).toBeDefined();
    expect((await first).body.error?.code).toBe('RFT_ERR_SANDBOX_QUEUE_TIMEOUT');
    expect((await rollout(b, 'shared')).calls).toEqual([]);

    // The retry on the other replica runs it.
    const retry = await call(b, 'shared', 'c1', 'echo ran');
    expect(retry.status).toBe(200);
    expect(retry.body.output).toContain('ran');
  });
});

describeIf(bwrap.available, 'bubblewrap', bwrap.reason)('a sandbox that cannot be created (bwrap)', () => {
  it("answers 503 with Retry-After, uncharged and unrecorded, when the server cannot build a workspace (ours); a template the row names that does not exist is a 4xx observation", async () => {
    const s = await startTestServer({ env: { RFT_SANDBOX: 'bwrap', RFT_SANDBOX_WARM: '0', RFT_SANDBOX_WARM_MAX_MB: '0' } });
    onTestFinished(() => s.close());
    const root = join(tmpdir(), 'rft-endpoints', instanceIdFor(s.dataDir));
    // A template the dataset row names that does not exist: deterministic, the row's mistake, shown to the model.
    const t = await call(s, 'notemplate', 'c1', 'echo hi', { sandbox: { template: 'no/such/template' } });
    expect(t.status).toBe(200);
    expect(t.body.output).toMatch(/template "no\/such\/template": does not exist/);
    expect((await rollout(s, 'notemplate')).calls.map((c) => c.status)).toEqual(['tool_error']);

    // The sandboxes root broken under the server (a host failure): no workspace can be made.
    await rm(root, { recursive: true, force: true });
    await writeFile(root, 'not a directory');
    const repair = async () => {
      if ((await stat(root)).isFile()) {
        await rm(root, { force: true });
        await mkdir(root, { recursive: true, mode: 0o711 });
      }
    };
    onTestFinished(repair);
    // (the warm pool may still hold up to 2 workspaces built before: the rollouts after them need a new one)
    let broken = '';
    let r: Reply | undefined;
    for (let i = 0; i < 4 && !broken; i++) {
      r = await call(s, `broken${i}`, 'c1', 'echo hi', { tool_budget: 1 });
      if (r.status !== 200) broken = `broken${i}`;
    }
    expect([r!.status, r!.body.error?.code]).toEqual([503, 'RFT_ERR_SANDBOX_UNAVAILABLE']);
    expect(r!.retryAfter).toBeDefined();
    const rec = await rollout(s, broken);
    expect(rec.calls).toEqual([]);
    expect(rec.budget).toMatchObject({ used: 0, limit: 1 });

    // Repaired: the retry with the same call_id runs, charged once.
    await repair();
    const ok = await call(s, broken, 'c1', 'echo hi', { tool_budget: 1 });
    expect([ok.status, ok.body.output]).toEqual([200, expect.stringContaining('hi')]);
    expect((await rollout(s, broken)).budget).toMatchObject({ used: 1, limit: 1 });
  });
});

describeIf(pgUnavailable === undefined, 'Postgres', pgUnavailable ?? '')('an un-begin the store cannot take (Postgres down)', () => {
  it("answers the store's 503; the call stays running and the next boot closes it as interrupted, never run again nor shown", async () => {
    const schema = randomSchema();
    schemas.push(schema);
    const proxy = await startPgProxy();
    onTestFinished(() => proxy.close());
    const env = { RFT_STORE: 'postgres', RFT_DATABASE_URL: proxy.url, RFT_PG_SCHEMA: schema, RFT_INSTANCE_ID: 'unbegin-outage' };
    const toolsDir = join(repoRoot, 'test/fixtures/units/infra-tools');
    const s = await startTestServer({ toolsDir, env });
    let closed = false;
    onTestFinished(() => (closed ? undefined : s.close()));
    const g = gate();
    const post = (srv: TestServer) =>
      request(`${srv.url}/tools`, {
        method: 'POST',
        headers: { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'function_call', name: 'gated_failure', call_id: 'c1', trace_id: 'outage', arguments: JSON.stringify({ gate: g.path }) }),
      });
    const pending = post(s);
    await untilCallStatus(s.url, s.key, 'outage', 'c1', 'running');
    await proxy.down();
    g.open();
    const res = await pending;
    expect(res.statusCode).toBe(503);
    expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_STORE');
    await proxy.up();
    await untilCallStatus(s.url, s.key, 'outage', 'c1', 'running');
    await s.close();
    closed = true;

    const again = await startTestServer({ toolsDir, env });
    onTestFinished(() => again.close());
    await untilCallStatus(again.url, again.key, 'outage', 'c1', 'interrupted');
    const retry = await post(again);
    expect(retry.statusCode).toBe(503);
    expect(((await retry.body.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_CALL_INTERRUPTED');
  });
});
