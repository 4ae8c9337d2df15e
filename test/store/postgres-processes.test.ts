// Two real server processes (the `serve` CLI) on one Postgres schema, as two replicas would run:
// the budget holds across processes, and a replica killed with -9 and restarted interrupts only
// the call it was running, not the one running on the other replica.
import { afterAll, expect, it, vi } from 'vitest';
import { request } from 'undici';
import { fixtureGraders, fixtureTools, functionCall, newTrace } from '../helpers/fixtures.js';
import { gate, postToolCall, spawnServer, untilCallStatus, type ChildServer } from '../helpers/child-server.js';
import { describeIf } from '../helpers/require.js';
import { databaseUrl, dropSchema, postgresUnavailable, randomSchema } from './postgres-db.js';

const KEY = 'postgres-processes-key-0123456789';
const unavailable = await postgresUnavailable();
const schema = randomSchema();
const started: ChildServer[] = [];

const replica = async (id: string) => {
  const s = await spawnServer({
    RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: schema, RFT_INSTANCE_ID: id,
    RFT_API_KEYS: `t:${KEY}`, RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders, RFT_TOOL_BUDGET: '10', RFT_RATE_LIMIT: '0',
  });
  started.push(s);
  return s;
};

const post = (url: string, body: unknown) => postToolCall(url, KEY, body);

async function calls(url: string, trace: string) {
  const res = await request(`${url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${KEY}` } });
  return ((await res.body.json()) as { calls: { call_id: string; status: string; output: string }[] }).calls;
}

describeIf(unavailable === undefined, 'Postgres', unavailable ?? '')('two server processes sharing one Postgres database', () => {
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop('SIGKILL')));
    await dropSchema(schema);
  });

  it('runs exactly 10 of 50 parallel calls split across the two processes with budget 10', async () => {
    const [a, b] = await Promise.all([replica('proc-a'), replica('proc-b')]);
    const trace = newTrace();
    const batch = Array.from({ length: 50 }, (_, i) => functionCall('echo', { text: `c${i}` }, { trace_id: trace }));
    const replies = await Promise.all(batch.map((c, i) => post((i % 2 ? a : b).url, c)));
    expect(replies.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(replies.filter((r) => /^c\d+$/.test(r.body.output))).toHaveLength(10);
    const recorded = await calls(a.url, trace);
    expect(recorded.filter((c) => c.status === 'ok')).toHaveLength(10);
    expect(recorded.filter((c) => c.status === 'budget_exceeded')).toHaveLength(40);
    await Promise.all([a.stop(), b.stop()]);
  }, 60_000);

  it('interrupts only the killed process\'s call when it restarts, while the other process finishes its own', async () => {
    const [a, b] = await Promise.all([replica('proc-c'), replica('proc-d')]);
    const finishB = gate();
    const onA = functionCall('echo', { text: 'killed', wait_for: gate().path });
    const onB = functionCall('echo', { text: 'survives', wait_for: finishB.path });
    const pendingA = post(a.url, onA).catch((e: Error) => e);
    const pendingB = post(b.url, onB);
    await untilCallStatus(a.url, KEY, onA.trace_id, onA.call_id, 'running');
    await untilCallStatus(b.url, KEY, onB.trace_id, onB.call_id, 'running');
    await a.stop('SIGKILL');
    expect(await pendingA).toBeInstanceOf(Error);

    const restartedA = await replica('proc-c');
    // Logged on stdout before the address is printed on stderr, but the two pipes are read apart: on
    // a loaded machine both arrive in one wake-up and the address may be read first.
    await vi.waitFor(() => expect(restartedA.stdout()).toMatch(/"interrupted":1,.*marked interrupted/), { timeout: 10_000 });
    expect(await calls(restartedA.url, onA.trace_id)).toMatchObject([{ call_id: onA.call_id, status: 'interrupted' }]);
    // B's call, still running through A's restart, was left alone and finishes as its own.
    expect(await calls(restartedA.url, onB.trace_id)).toMatchObject([{ call_id: onB.call_id, status: 'running' }]);
    finishB.open();
    expect((await pendingB).body.output).toBe('survives');
    expect(await calls(restartedA.url, onB.trace_id)).toMatchObject([{ call_id: onB.call_id, status: 'ok', output: 'survives' }]);
    await Promise.all([restartedA.stop(), b.stop()]);
  }, 60_000);
});
