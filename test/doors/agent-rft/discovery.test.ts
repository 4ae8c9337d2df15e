import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, functionCall, startFixtureServer } from '../../helpers/fixtures.js';
import type { TestServer } from '../../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ listen: false, env: { RFT_DEFAULT_GRADER: 'exact' } });
});
afterAll(() => s.close());

const get = (url: string) => s.app.inject({ method: 'GET', url, headers: bearer(s.key) });

describe('discovery and the record', () => {
  it('publishes the tools as a Chat Completions tools array with JSON Schema parameters', async () => {
    const { tools } = (await get('/v1/tools')).json();
    const echo = tools.find((t: { function: { name: string } }) => t.function.name === 'echo');
    expect(echo).toEqual({
      type: 'function',
      function: {
        name: 'echo',
        description: 'Echoes its text back.',
        parameters: expect.objectContaining({
          type: 'object',
          properties: expect.objectContaining({ text: { type: 'string', description: 'what to echo' } }),
          required: ['text'],
        }),
      },
    });
  });

  it('produces a method.reinforcement fragment for a base URL', async () => {
    const res = (await get('/v1/job-config?base_url=https://rft.example.com/')).json();
    expect(res.tools).toContainEqual({ name: 'echo', server_url: 'https://rft.example.com/tools', headers: { Authorization: 'Bearer <YOUR_RFT_KEY>' } });
    expect(res.grader).toMatchObject({ type: 'endpoint', name: 'exact', url: 'https://rft.example.com/graders/exact' });
  });

  it('limits both answers to the tools named in ?tools= (one task of a server holding several), in that order', async () => {
    const names = (await get('/v1/tools?tools=fail,echo')).json().tools.map((t: { function: { name: string } }) => t.function.name);
    expect(names).toEqual(['fail', 'echo']);
    const job = (await get('/v1/job-config?tools=echo&base_url=https://rft.example.com')).json();
    expect(job.tools.map((t: { name: string }) => t.name)).toEqual(['echo']);
    const unknown = await get('/v1/tools?tools=echo,nope');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatchObject({ code: 'RFT_ERR_UNKNOWN_TOOL', details: { tool: 'nope' } });
  });

  it('refuses a base_url that is not a URL', async () => {
    expect((await get('/v1/job-config?base_url=nope')).json().error.code).toBe('RFT_ERR_BAD_REQUEST');
  });

  it('lists rollouts newest first, paged with a cursor', async () => {
    const traces: string[] = [];
    for (let i = 0; i < 3; i++) {
      const c = functionCall('echo', { text: 'p' });
      traces.push(c.trace_id);
      await s.app.inject({ method: 'POST', url: '/tools', headers: bearer(s.key), payload: c });
      // The next rollout starts in a later millisecond (same-millisecond ties are ordered by trace id).
      const now = Date.now();
      while (Date.now() === now) await new Promise((r) => setImmediate(r));
    }
    const p1 = (await get('/v1/rollouts?limit=2')).json();
    expect(p1.rollouts.map((r: { trace_id: string }) => r.trace_id)).toEqual([traces[2], traces[1]]);
    const p2 = (await get(`/v1/rollouts?limit=2&cursor=${p1.next_cursor}`)).json();
    expect(p2.rollouts[0].trace_id).toBe(traces[0]);
    expect(p2.rollouts[0]).toMatchObject({ calls: 1, budget: { used: 1, limit: 50, exceeded: false }, last_score: null });
  });

  it('answers 404 with a code for an unknown rollout or route', async () => {
    expect((await get('/v1/rollouts/trace_nope')).json().error.code).toBe('RFT_ERR_NOT_FOUND');
    expect((await get('/nope')).statusCode).toBe(404);
  });

  it('exports a rollout and imports it into another server unchanged', async () => {
    const c = functionCall('echo', { text: 'move me' });
    await s.app.inject({ method: 'POST', url: '/tools', headers: bearer(s.key), payload: c });
    await s.app.inject({ method: 'POST', url: '/grade', headers: bearer(s.key), payload: { sample: { output_text: 'x' }, item: {}, trace_id: c.trace_id } });
    const exported = (await get(`/v1/rollouts/${c.trace_id}`)).json();
    const other = await startFixtureServer({ listen: false });
    try {
      const imp = await other.app.inject({ method: 'POST', url: '/v1/rollouts/import', headers: bearer(other.key), payload: { rollouts: [exported] } });
      expect(imp.json().results).toEqual([{ trace_id: c.trace_id, status: 'imported' }]);
      const back = (await other.app.inject({ method: 'GET', url: `/v1/rollouts/${c.trace_id}`, headers: bearer(other.key) })).json();
      expect({ ...back, grades: back.grades.map((g: object) => ({ ...g, id: 0 })) }).toEqual({ ...exported, grades: exported.grades.map((g: object) => ({ ...g, id: 0 })) });
      const bad = await other.app.inject({ method: 'POST', url: '/v1/rollouts/import', headers: bearer(other.key), payload: { rollouts: [{ trace_id: 'x' }] } });
      expect(bad.json().error.code).toBe('RFT_ERR_BAD_REQUEST');
    } finally {
      await other.close();
    }
  });
});
