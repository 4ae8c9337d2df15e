import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEventListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { defineGrader } from '../../src/index.js';
import type { GraderDefinition } from '../../src/registry/define.js';
import type { LoadedGrader } from '../../src/registry/loader.js';
import { GradingService } from '../../src/grading-service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { bearer, functionCall, newTrace, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { gradeRuns } from '../fixtures/units/graders/exact.js';
import { slowRuns } from '../fixtures/units/graders/slow.js';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ listen: false, env: { RFT_DEFAULT_GRADER: 'exact' } });
});
afterAll(() => s.close());

const post = (url: string, payload: unknown) => s.app.inject({ method: 'POST', url, headers: bearer(s.key), payload: payload as object });
const sample = (text: string) => ({ output_text: text, output_json: null, output_tools: [], choices: [] });
const record = async (trace: string) => (await s.app.inject({ method: 'GET', url: `/v1/rollouts/${trace}`, headers: bearer(s.key) })).json();

describe('grader endpoint', () => {
  it('scores a sample through POST /grade (the default grader) and POST /graders/:name', async () => {
    const item = { reference_answer: '4.2' };
    expect((await post('/grade', { sample: sample('4.2'), item, trace_id: newTrace() })).json()).toEqual({ score: 1 });
    expect((await post('/graders/exact', { sample: sample('about 4.2'), item, trace_id: newTrace() })).json()).toEqual({ score: 0.5 });
  });

  it('reads the rollout recorded under the trace id (budget penalty)', async () => {
    const trace = newTrace();
    for (let i = 0; i < 5; i++) await post('/tools', functionCall('echo', { text: `${i}` }, { trace_id: trace }));
    const res = await post('/grade', { sample: sample('4.2'), item: { reference_answer: '4.2' }, trace_id: trace });
    expect(res.json().score).toBeCloseTo(0.8);
    const rec = await record(trace);
    expect(rec.grades[0]).toMatchObject({ grader: 'exact', score: 0.8, status: 'ok', source: 'endpoint', subscores: { answer: 1 } });
    expect(rec.grades[0].explanation).toBe('answer 1, 5 calls');
    expect(rec.grades[0].grader_version).toMatch(/^[0-9a-f]{12}$/);
  });

  it('returns the recorded score for a retried grade without running the grader again', async () => {
    const trace = newTrace();
    const body = { sample: sample('4.2'), item: { reference_answer: '4.2' }, trace_id: trace };
    await post('/grade', body);
    await post('/grade', body);
    expect(gradeRuns.filter((t) => t === trace)).toHaveLength(1);
    expect((await record(trace)).grades).toHaveLength(1);
  });

  it('runs five identical grades sent at once over HTTP once, and gives all five its score', async () => {
    await s.app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(s.app.server.address() as { port: number }).port}`;
    const grade = (path: string, body: object) =>
      fetch(url + path, { method: 'POST', headers: { ...bearer(s.key), 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
        async (r) => ({ status: r.status, body: (await r.json()) as { score?: number; error?: { code: string } } }),
      );
    // The grader takes 1 s, so all five are in flight together (sequential retries are joined by the record).
    const trace = newTrace();
    const body = { sample: sample('x'), item: { delay_ms: 1000 }, trace_id: trace };
    const replies = await Promise.all(Array.from({ length: 5 }, () => grade('/graders/slow', body)));
    expect(replies.map((r) => r.body)).toEqual(Array(5).fill({ score: 0.75 }));
    expect(slowRuns.filter((t) => t === trace)).toHaveLength(1);
    expect((await record(trace)).grades).toHaveLength(1);

    // A failure is shared too: five 500s, one run, one recorded failure.
    const failing = newTrace();
    const failures = await Promise.all(Array.from({ length: 5 }, () => grade('/graders/slow', { sample: sample('x'), item: { delay_ms: 1000, fail: true }, trace_id: failing })));
    expect(failures.map((r) => [r.status, r.body.error?.code])).toEqual(Array(5).fill([500, 'RFT_ERR_GRADER_FAILED']));
    expect(slowRuns.filter((t) => t === failing)).toHaveLength(1);
    expect((await record(failing)).grades).toHaveLength(1);
  });

  it('answers 500 with a coded error when the grader throws, and records the failure', async () => {
    const trace = newTrace();
    const res = await post('/graders/broken', { sample: sample('x'), item: {}, trace_id: trace });
    expect(res.statusCode).toBe(500);
    expect(res.json().error.code).toBe('RFT_ERR_GRADER_FAILED');
    const g = (await record(trace)).grades[0];
    expect(g).toMatchObject({ status: 'error', score: null });
    expect(g.error).toMatch(/reference file missing/);
  });

  it('refuses a non-finite or out-of-range score with 500', async () => {
    for (const mode of ['nan', 'range']) {
      const res = await post('/graders/broken', { sample: sample('x'), item: { mode }, trace_id: newTrace() });
      expect(res.statusCode).toBe(500);
      expect(res.json().error.code).toBe('RFT_ERR_GRADER_BAD_SCORE');
    }
  });

  it('answers 404 for an unknown grader and 400 for a request without a sample', async () => {
    expect((await post('/graders/nope', { sample: sample('x') })).json().error.code).toBe('RFT_ERR_UNKNOWN_GRADER');
    const res = await post('/grade', { item: {} });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('RFT_ERR_BAD_REQUEST');
  });

  it('refuses to re-grade a rollout that was never graded with its own code', async () => {
    const c = functionCall('echo', { text: 'x' });
    await post('/tools', c);
    const res = await post(`/v1/rollouts/${c.trace_id}/regrade`, {});
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('RFT_ERR_NOT_GRADED');
  });

  it('re-grades the stored sample and keeps both scores', async () => {
    const trace = newTrace();
    await post('/grade', { sample: sample('4.2'), item: { reference_answer: '4.2' }, trace_id: trace });
    const res = await post(`/v1/rollouts/${trace}/regrade`, {});
    expect(res.json()).toMatchObject({ trace_id: trace, grader: 'exact', previous: { score: 1 }, current: { score: 1 } });
    const grades = (await record(trace)).grades;
    expect(grades.map((g: { source: string }) => g.source)).toEqual(['endpoint', 'regrade']);
  });
});

// What AbortSignal.any leaves on a source signal: Node 20 keeps a WeakRef per joined signal there
// for good (0 where Node keeps none).
const dependants = (signal: AbortSignal): number => {
  const sym = Object.getOwnPropertySymbols(signal).find((x) => x.description === 'kDependantSignals');
  return sym ? ((signal as unknown as Record<symbol, Set<unknown> | undefined>)[sym]?.size ?? 0) : 0;
};

describe('the grader signal and the server shutdown', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-grading-'));
  const store = new SqliteStore({ path: join(dir, 'db.sqlite') });
  const shutdown = new AbortController();
  const log = pino({ level: 'silent' });
  const service = new GradingService({ store, sandboxes: undefined, defaultBudget: 10, timeoutMs: 10_000, templatesRoot: dir, log, shutdown: shutdown.signal });
  const grader = (name: string, handler: GraderDefinition['handler']): LoadedGrader => ({
    def: defineGrader({ name, description: name, handler }),
    file: `${name}.ts`,
    version: 'v1',
    range: [0, 1],
  });
  const input = (traceId: string) => ({ sample: sample('x'), item: {}, traceId, credential: null, source: 'test' });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves nothing on the process-long shutdown signal once grades are done (a soak grew by one WeakRef per grade)', async () => {
    // The probe sees what AbortSignal.any leaves on its sources on this Node, so the check below can fail.
    const control = new AbortController();
    const joined = AbortSignal.any([control.signal]);
    expect(dependants(control.signal)).toBe(1);
    expect(joined.aborted).toBe(false);

    const live: boolean[] = [];
    const probe = grader('probe', (_i, ctx) => {
      live.push(!ctx.signal.aborted);
      return 1;
    });
    for (let i = 0; i < 50; i++) expect((await service.grade(probe, input(`trace_sig${i}`))).record.score).toBe(1);
    expect(live).toEqual(Array.from({ length: 50 }, () => true));
    expect(dependants(shutdown.signal)).toBe(0);
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });

  it('still aborts a running grader at shutdown, with the shutdown reason', async () => {
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const waits = grader('waits', (_i, ctx) => {
      entered();
      return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true }));
    });
    const running = service.grade(waits, input('trace_sig_shutdown'));
    await inside;
    shutdown.abort(new Error('test shutdown'));
    await expect(running).rejects.toMatchObject({ message: expect.stringContaining('test shutdown') });
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });
});
