import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, functionCall, newTrace, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { runs } from '../fixtures/units/tools/echo.js';
import { steps } from '../fixtures/units/tools/serial_step.js';
import { peeks } from '../fixtures/units/tools/peek.js';
import { gate } from '../helpers/child-server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ listen: false, env: { RFT_TOOL_BUDGET: '10' } });
});
afterAll(() => s.close());

const post = (payload: unknown) => s.app.inject({ method: 'POST', url: '/tools', headers: bearer(s.key), payload: payload as object });
const record = async (trace: string) => (await s.app.inject({ method: 'GET', url: `/v1/rollouts/${trace}`, headers: bearer(s.key) })).json();

describe('ledger', () => {
  it('returns the recorded output for a retried call id without running or charging again', async () => {
    const call = functionCall('echo', { text: 'once' });
    const first = await post(call);
    const again = await post(call);
    expect(again.json()).toEqual(first.json());
    expect(runs.get(call.trace_id)).toBe(1);
    expect((await record(call.trace_id)).budget.used).toBe(1);
  });

  it('treats a retry with reordered argument keys as the same call', async () => {
    const trace = newTrace();
    const a = functionCall('echo', '{"text":"k","delay_ms":0}', { trace_id: trace });
    await post(a);
    const res = await post({ ...a, arguments: '{"delay_ms":0,"text":"k"}' });
    expect(res.statusCode).toBe(200);
    expect(runs.get(trace)).toBe(1);
  });

  it('refuses a reused call id with different arguments with 409', async () => {
    const call = functionCall('echo', { text: 'one' });
    await post(call);
    const res = await post({ ...call, arguments: JSON.stringify({ text: 'two' }) });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('RFT_ERR_CALL_CONFLICT');
  });

  it('makes a duplicate that arrives while the first is running wait for it', async () => {
    const call = functionCall('echo', { text: 'slow', delay_ms: 300 });
    const [a, b] = await Promise.all([post(call), post(call)]);
    expect(a.json().output).toBe('slow');
    expect(b.json().output).toBe('slow');
    expect(runs.get(call.trace_id)).toBe(1);
  });

  it('runs exactly 10 of 50 parallel calls on one rollout with a budget of 10', async () => {
    const trace = newTrace();
    const calls = Array.from({ length: 50 }, (_, i) => functionCall('echo', { text: `c${i}`, delay_ms: 5 }, { trace_id: trace }));
    const replies = await Promise.all(calls.map(post));
    expect(replies.every((r) => r.statusCode === 200)).toBe(true);
    const outputs = replies.map((r) => r.json().output as string);
    expect(outputs.filter((o) => /^c\d+$/.test(o))).toHaveLength(10);
    expect(outputs.filter((o) => o.startsWith('Tool budget exhausted'))).toHaveLength(40);
    expect(runs.get(trace)).toBe(10);
    const rec = await record(trace);
    expect(rec.budget).toEqual({ used: 10, limit: 10, exceeded: true });
    expect(rec.calls).toHaveLength(50);
    expect(rec.calls.map((c: { seq: number }) => c.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('quotes the budget it enforces (the rollout\'s first row), not the tool_budget a later call carries', async () => {
    const trace = newTrace();
    await post(functionCall('echo', { text: '1' }, { trace_id: trace, item: { tool_budget: 1 } }));
    const second = await post(functionCall('echo', { text: '2' }, { trace_id: trace, item: { tool_budget: 50 } }));
    expect(second.json().output).toMatch(/^Tool budget exhausted: this rollout may use 1 tool-call unit\(s\)/);
    expect((await record(trace)).budget).toEqual({ used: 1, limit: 1, exceeded: true });
  });

  it('tells the model the budget is spent, and takes the budget from the dataset row', async () => {
    const trace = newTrace();
    const item = { tool_budget: 2 };
    await post(functionCall('echo', { text: '1' }, { trace_id: trace, item }));
    const second = await post(functionCall('json_result', { n: 1 }, { trace_id: trace, item }));
    expect(second.json().output).toMatch(/^Tool budget exhausted: this rollout may use 2 tool-call unit\(s\).*"json_result" \(cost 2\)/);
    const rec = await record(trace);
    expect(rec.calls[1]).toMatchObject({ status: 'budget_exceeded', cost: 0 });
    expect(rec.budget).toEqual({ used: 1, limit: 2, exceeded: true });
  });

  it('runs serial tools of one rollout one at a time, in arrival order, while other tools run alongside', async () => {
    const trace = newTrace();
    // The first serial call runs until the unrelated call has answered (it used to run 150 ms, which
    // a loaded machine could outlast before the unrelated call ran, and it then finished second).
    const finish = gate();
    const a = post(functionCall('serial_step', { name: 'a', delay_ms: 0, wait_for: finish.path }, { trace_id: trace }));
    const b = post(functionCall('serial_step', { name: 'b', delay_ms: 10 }, { trace_id: trace }));
    const free = post(functionCall('echo', { text: 'free' }, { trace_id: trace }));
    const c = post(functionCall('serial_step', { name: 'c', delay_ms: 10 }, { trace_id: trace }));
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the unrelated call waited behind the serial one')), 20_000)));
    const rf = await Promise.race([free, stuck]).finally(() => clearTimeout(timer));
    finish.open();
    const [ra, rb, rc] = await Promise.all([a, b, c]);
    expect([ra, rb, rf, rc].map((r) => r.json().output)).toEqual(['a', 'b', 'free', 'c']);
    expect(steps.get(trace)).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
    // The unrelated tool did not wait behind the serial call (it answered while the gate held the first
    // one, above); the record agrees. Times are in milliseconds: the gate opens right after the unrelated
    // call answers, so both may end in the same one (a CI run: equal), never in the other order.
    const rec = await record(trace);
    const echo = rec.calls.find((x: { tool: string }) => x.tool === 'echo');
    expect(Date.parse(echo.finished_at)).toBeLessThanOrEqual(Date.parse(rec.calls.find((x: { call_id: string; tool: string }) => x.tool === 'serial_step').finished_at));
  });

  it('records and replays a read-only tool like any other, charging its budget once', async () => {
    const call = functionCall('peek', { key: 'k' });
    const first = await post(call);
    const again = await post(call);
    expect(first.json().output).toBe('value of k');
    expect(again.json()).toEqual(first.json());
    expect(peeks.get(call.trace_id)).toBe(1);
    const rec = await record(call.trace_id);
    expect(rec.calls).toMatchObject([{ call_id: call.call_id, status: 'ok', output: 'value of k' }]);
    expect(rec.budget.used).toBe(1);
  });

  it('records the credential label on every call', async () => {
    const call = functionCall('echo', { text: 'who' });
    await post(call);
    expect((await record(call.trace_id)).calls[0].credential).toBe('test');
  });
});
