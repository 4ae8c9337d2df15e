// Two real servers (two replicas) on 127.0.0.1 sharing one Postgres schema: the guarantees a single
// server gives (budget, idempotency, webhook replay, the durable record) hold across both.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { bearer, fixtureGraders, fixtureTools, functionCall, newTrace } from '../helpers/fixtures.js';
import { describeIf } from '../helpers/require.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { gate, untilCallStatus } from '../helpers/child-server.js';
import { signWebhook } from '../../src/authentication/webhooks.js';
import { runs } from '../fixtures/units/tools/echo.js';
import { databaseUrl, dropSchema, postgresUnavailable, randomSchema } from './postgres-db.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const unavailable = await postgresUnavailable();
const schema = randomSchema();
let a: TestServer;
let b: TestServer;

const replica = (id: string) =>
  startTestServer({
    toolsDir: fixtureTools,
    gradersDir: fixtureGraders,
    env: {
      RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: schema, RFT_INSTANCE_ID: id,
      RFT_TOOL_BUDGET: '10', RFT_SIGNING_SECRETS: SECRET, RFT_RATE_LIMIT: '0',
    },
  });

const post = (s: TestServer, path: string, body: unknown, headers: Record<string, string> = bearer(s.key)) =>
  fetch(`${s.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const record = async (s: TestServer, trace: string) =>
  (await (await fetch(`${s.url}/v1/rollouts/${trace}`, { headers: bearer(s.key) })).json()) as { budget: unknown; calls: unknown[]; grades: unknown[] };

describeIf(unavailable === undefined, 'Postgres', unavailable ?? '')('two servers sharing one Postgres database', () => {
  beforeAll(async () => {
    [a, b] = await Promise.all([replica('replica-a'), replica('replica-b')]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await dropSchema(schema);
  });

  it('runs exactly 10 of 50 parallel calls split across both servers on one rollout with budget 10', async () => {
    const trace = newTrace();
    const calls = Array.from({ length: 50 }, (_, i) => functionCall('echo', { text: `c${i}`, delay_ms: 5 }, { trace_id: trace }));
    const replies = await Promise.all(calls.map((c, i) => post(i % 2 ? a : b, '/tools', c)));
    expect(replies.map((r) => r.status)).toEqual(Array(50).fill(200));
    const outputs = await Promise.all(replies.map(async (r) => ((await r.json()) as { output: string }).output));
    expect(outputs.filter((o) => /^c\d+$/.test(o))).toHaveLength(10);
    expect(outputs.filter((o) => o.startsWith('Tool budget exhausted'))).toHaveLength(40);
    expect(runs.get(trace)).toBe(10);
    for (const s of [a, b]) {
      const rec = await record(s, trace);
      expect(rec.budget).toEqual({ used: 10, limit: 10, exceeded: true });
      expect(rec.calls).toHaveLength(50);
    }
  });

  it('answers a retry that reaches the other server with the recorded output, without running it again', async () => {
    const call = functionCall('echo', { text: 'once' });
    const first = await (await post(a, '/tools', call)).json();
    const again = await (await post(b, '/tools', call)).json();
    expect(again).toEqual(first);
    expect(runs.get(call.trace_id)).toBe(1);
  });

  it('makes a duplicate on the other server wait for the call still running on the first', async () => {
    const finish = gate();
    const call = functionCall('echo', { text: 'slow', wait_for: finish.path });
    const x = post(a, '/tools', call);
    await untilCallStatus(a.url, a.key, call.trace_id, call.call_id, 'running');
    let answered = false;
    const y = post(b, '/tools', call).finally(() => (answered = true));
    // While the first still runs, the duplicate is not answered; it is once the first finishes.
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBe(false);
    finish.open();
    expect([((await (await x).json()) as { output: string }).output, ((await (await y).json()) as { output: string }).output]).toEqual(['slow', 'slow']);
    expect(runs.get(call.trace_id)).toBe(1);
  });

  it('accepts on one server a signed retry of a request the other answered (same id and body, run once), and refuses the id with another body', async () => {
    const id = `msg_${randomUUID()}`;
    const ts = Math.floor(Date.now() / 1000);
    const call = functionCall('echo', { text: 'signed' });
    const send = (s: TestServer, payload: string) =>
      fetch(`${s.url}/tools`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signWebhook(SECRET, id, ts, payload) },
        body: payload,
      });
    const first = await send(a, JSON.stringify(call));
    expect(first.status).toBe(200);
    const retry = await send(b, JSON.stringify(call));
    expect(retry.status).toBe(200);
    expect(await retry.json()).toEqual(await first.json());
    expect(runs.get(call.trace_id)).toBe(1);
    const other = await send(b, JSON.stringify(functionCall('echo', { text: 'another body' })));
    expect(other.status).toBe(401);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_SIGNATURE_REPLAY');
  });

  it('shows a grade recorded by one server in the other server\'s record and listing', async () => {
    const trace = newTrace();
    const item = { reference_answer: '42' };
    await post(a, '/tools', functionCall('echo', { text: 'x' }, { trace_id: trace, item }));
    const graded = await post(a, '/graders/exact', { sample: { output_text: '42' }, item, trace_id: trace });
    expect(((await graded.json()) as { score: number }).score).toBe(1);
    const rec = await record(b, trace);
    expect(rec.grades).toMatchObject([{ grader: 'exact', score: 1, sample: { output_text: '42' } }]);
    const list = (await (await fetch(`${b.url}/v1/rollouts?limit=500`, { headers: bearer(b.key) })).json()) as { rollouts: { trace_id: string; last_score: number }[] };
    expect(list.rollouts.find((r) => r.trace_id === trace)?.last_score).toBe(1);
  });

  it('leaves a call running on one server alone when another replica boots, and interrupts it when its own replica restarts', async () => {
    const finish = gate();
    const slow = functionCall('echo', { text: 'survives', wait_for: finish.path });
    const running = post(a, '/tools', slow);
    await untilCallStatus(a.url, a.key, slow.trace_id, slow.call_id, 'running');
    const c = await replica('replica-c');
    await c.close();
    expect((await record(b, slow.trace_id)).calls).toMatchObject([{ status: 'running' }]);
    finish.open();
    expect(((await (await running).json()) as { output: string }).output).toBe('survives');
    expect((await record(b, slow.trace_id)).calls).toMatchObject([{ status: 'ok', output: 'survives' }]);

    // replica-b "restarts" while b still runs the call: the record says interrupted, and b's late
    // finish does not overwrite it.
    const finishCut = gate();
    const cut = functionCall('echo', { text: 'cut', wait_for: finishCut.path });
    const inFlight = post(b, '/tools', cut);
    await untilCallStatus(b.url, b.key, cut.trace_id, cut.call_id, 'running');
    const restartedB = await replica('replica-b');
    await restartedB.close();
    expect((await record(a, cut.trace_id)).calls).toMatchObject([{ status: 'interrupted' }]);
    finishCut.open();
    await (await inFlight).text();
    expect((await record(a, cut.trace_id)).calls).toMatchObject([{ status: 'interrupted' }]);
  });

  it('reports ready when the shared database takes writes', async () => {
    const res = await fetch(`${b.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ready', store: 'writable' });
  });
});
