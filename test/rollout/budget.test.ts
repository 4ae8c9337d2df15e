import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import pino from 'pino';
import { bearer, functionCall, newTrace, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { budgetFromItem, isValidToolBudget, toolBudgetProblem } from '../../src/rollout/budget.js';

const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
    cb();
  },
});

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ listen: false, env: { RFT_TOOL_BUDGET: '3' }, logger: pino({ level: 'warn' }, sink) });
});
afterAll(() => s.close());

const post = (payload: unknown) => s.app.inject({ method: 'POST', url: '/tools', headers: bearer(s.key), payload: payload as object });
const budgetOf = async (trace: string) => (await s.app.inject({ method: 'GET', url: `/v1/rollouts/${trace}`, headers: bearer(s.key) })).json().budget;

describe('a row\'s tool_budget', () => {
  it('accepts non-negative integers only', () => {
    for (const v of [0, 1, 12, Number.MAX_SAFE_INTEGER]) expect(isValidToolBudget(v)).toBe(true);
    for (const v of ['12', 0.5, -1, null, true, NaN, Infinity, 2 ** 53, {}, []]) expect(isValidToolBudget(v)).toBe(false);
    expect(toolBudgetProblem({})).toBeUndefined();
    expect(toolBudgetProblem({ tool_budget: 4 })).toBeUndefined();
    expect(toolBudgetProblem({ tool_budget: '12' })).toMatch(/got "12"/);
    expect(budgetFromItem({ tool_budget: -1 }, 7)).toBe(7);
  });

  it('runs a rollout with an invalid tool_budget on the default budget, and warns once for the rollout', async () => {
    for (const bad of ['12', 0.5, -1]) {
      const trace = newTrace();
      const item = { tool_budget: bad };
      for (let i = 0; i < 3; i++) expect((await post(functionCall('echo', { text: `${i}` }, { trace_id: trace, item }))).statusCode).toBe(200);
      expect(await budgetOf(trace)).toMatchObject({ limit: 3, used: 3 });
      const warnings = lines.filter((l) => l.trace_id === trace);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40, default_budget: 3 });
      expect(String(warnings[0]!.msg)).toContain('tool_budget must be a non-negative integer');
    }
  });

  it('says nothing about a valid or absent tool_budget', async () => {
    const trace = newTrace();
    await post(functionCall('echo', { text: 'a' }, { trace_id: trace, item: { tool_budget: 5 } }));
    await post(functionCall('echo', { text: 'b' }, { trace_id: newTrace() }));
    expect(lines.filter((l) => l.trace_id === trace)).toHaveLength(0);
    expect(await budgetOf(trace)).toMatchObject({ limit: 5 });
  });
});
