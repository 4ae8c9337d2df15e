// What the dashboard reads from a store (integrity flags, tallies, filtered lists, stats), run by
// the store contract against every store.
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.js';
import { LATENCY_EDGES_MS } from '../../src/stats/insights.js';
import { begin, grade } from '../store/contract.js';

const finish = (store: Store, traceId: string, callId: string, status: 'ok' | 'tool_error', durationMs: number) =>
  store.finishCall(traceId, callId, { output: 'x', status, finishedAt: 0, durationMs, outputBytes: 1, truncated: false });

export function insightsContract(label: string, fresh: () => Promise<Store>): void {
  describe(`${label}: integrity flags, tallies, filters and stats`, () => {
    it('keeps one flag per kind per rollout, counting its events and keeping the first call and detail', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_f', 'c1', { now: 10 }));
      await store.addFlag({ traceId: 'trace_f', kind: 'path_escape', callId: 'c1', detail: 'path "../x"', at: 20 });
      await store.addFlag({ traceId: 'trace_f', kind: 'path_escape', callId: 'c2', detail: 'path "/etc"', at: 30 });
      await store.addFlag({ traceId: 'trace_f', kind: 'no_tool_score', callId: null, detail: 'scored 1', at: 40 });
      const r = await store.getRollout('trace_f');
      expect(r?.integrityFlags).toEqual([
        { kind: 'path_escape', events: 2, callId: 'c1', detail: 'path "../x"', firstAt: 20, lastAt: 30 },
        { kind: 'no_tool_score', events: 1, callId: null, detail: 'scored 1', firstAt: 40, lastAt: 40 },
      ]);
      expect(r?.flags).toEqual(['path_escape', 'no_tool_score']);
    });

    it("tallies a rollout's calls (refused ones too) and whether its budget ran out", async () => {
      const store = await fresh();
      expect(await store.rolloutTally('trace_none')).toBeUndefined();
      for (const id of ['a', 'b', 'c']) await store.beginCall(begin('trace_t', id, { budgetLimit: 2 }));
      expect(await store.rolloutTally('trace_t')).toEqual({ calls: 3, budgetExceeded: true });
      // An un-begun attempt (a failure of ours) is no call; an imported rollout counts what it brought.
      const ours = await store.beginCall(begin('trace_u', 'ours'));
      await store.unbeginCall('trace_u', 'ours', ours.call.seq, 1);
      await store.beginCall(begin('trace_u', 'c1'));
      expect(await store.rolloutTally('trace_u')).toEqual({ calls: 1, budgetExceeded: false });
      expect((await store.listRollouts({ limit: 10 })).rollouts.find((r) => r.traceId === 'trace_u')).toMatchObject({ calls: 1 });
      await store.ensureRollout('trace_g', null, 5, 1);
      expect(await store.rolloutTally('trace_g')).toEqual({ calls: 0, budgetExceeded: false });
    });

    it('filters the rollout list by score range, tool, outcome, grader and flag, and names the last grader', async () => {
      const store = await fresh();
      await store.beginCall(begin('r_low', 'c1', { tool: 'search', now: 1 }));
      await store.insertGrade(grade('r_low', { score: 0.1, grader: 'exact', graderVersion: 'v1', createdAt: 5 }));
      await store.beginCall(begin('r_high', 'c1', { tool: 'shell', now: 2 }));
      await finish(store, 'r_high', 'c1', 'tool_error', 3);
      await store.insertGrade(grade('r_high', { score: 0.9, grader: 'fuzzy', graderVersion: 'v2', createdAt: 6 }));
      await store.addFlag({ traceId: 'r_high', kind: 'path_escape', callId: 'c1', detail: '..', at: 7 });
      await store.beginCall(begin('r_open', 'c1', { tool: 'search', now: 3, budgetLimit: 0 }));
      const ids = async (filter: Parameters<Store['listRollouts']>[0]['filter']) =>
        (await store.listRollouts({ limit: 10, filter })).rollouts.map((r) => r.traceId);
      expect(await ids({})).toEqual(['r_open', 'r_high', 'r_low']);
      expect(await ids({ minScore: 0.5 })).toEqual(['r_high']);
      expect(await ids({ maxScore: 0.5 })).toEqual(['r_low']);
      expect(await ids({ tool: 'search' })).toEqual(['r_open', 'r_low']);
      expect(await ids({ status: 'tool_error' })).toEqual(['r_high']);
      expect(await ids({ status: 'budget_exceeded' })).toEqual(['r_open']);
      expect(await ids({ grader: 'exact' })).toEqual(['r_low']);
      expect(await ids({ flag: 'any' })).toEqual(['r_high']);
      expect(await ids({ flag: 'no_tool_score' })).toEqual([]);
      expect(await ids({ tool: 'search', maxScore: 0.5 })).toEqual(['r_low']);
      const [high] = (await store.listRollouts({ limit: 1, filter: { flag: 'path_escape' } })).rollouts;
      expect(high).toMatchObject({ traceId: 'r_high', lastGrader: 'fuzzy', lastGraderVersion: 'v2', flags: ['path_escape'], calls: 1 });
    });

    it('pages a filtered list with the cursor', async () => {
      const store = await fresh();
      for (let i = 0; i < 5; i++) await store.beginCall(begin(`p${i}`, 'c', { tool: i % 2 ? 'odd' : 'even', now: i }));
      const first = await store.listRollouts({ limit: 2, filter: { tool: 'even' } });
      expect(first.rollouts.map((r) => r.traceId)).toEqual(['p4', 'p2']);
      const second = await store.listRollouts({ limit: 2, cursor: first.nextCursor!, filter: { tool: 'even' } });
      expect(second).toMatchObject({ rollouts: [{ traceId: 'p0' }], nextCursor: null });
    });

    it('groups a window: calls by bucket, tool, status and latency; rollouts started; grades per grader version; flags', async () => {
      const store = await fresh();
      const B = 1_000;
      // window [10_000, 13_000): three buckets; a rollout and a call before it are left out
      await store.beginCall(begin('before', 'c1', { now: 9_999 }));
      await store.beginCall(begin('r1', 'c1', { tool: 'search', now: 10_000, budgetLimit: 2 }));
      await finish(store, 'r1', 'c1', 'ok', 0.5);
      await store.beginCall(begin('r1', 'c2', { tool: 'search', now: 10_500 }));
      await finish(store, 'r1', 'c2', 'ok', 40);
      await store.beginCall(begin('r1', 'c3', { tool: 'search', now: 10_600 })); // over budget
      // An attempt un-begun (a failure of ours) is no tool call: r2 made one, r3 none
      const unbegun = async (traceId: string, now: number) => {
        const b = await store.beginCall(begin(traceId, 'ours', { tool: 'shell', now }));
        expect(await store.unbeginCall(traceId, 'ours', b.call.seq, now)).toBe(true);
      };
      await unbegun('r2', 11_100);
      await store.beginCall(begin('r2', 'c1', { tool: 'shell', now: 11_200 }));
      await finish(store, 'r2', 'c1', 'tool_error', 700_000);
      await unbegun('r3', 12_100);
      await store.insertGrade(grade('r1', { score: 0.2, createdAt: 11_000 }));
      await store.insertGrade(grade('r2', { score: 0.6, createdAt: 11_500 }));
      await store.insertGrade(grade('r3', { score: 1, createdAt: 12_500, graderVersion: 'v2' }));
      await store.insertGrade(grade('r3', { score: null, status: 'error', error: 'x', createdAt: 12_600, graderVersion: 'v2', sampleHash: 's2' }));
      await store.insertGrade(grade('r3', { score: null, status: 'error', error: 'RFT_ERR_BAD_ROW: the row does not match', createdAt: 12_650, graderVersion: 'v2', sampleHash: 's3' }));
      await store.insertGrade(grade('r2', { score: 0, createdAt: 12_700, source: 'regrade' }));
      await store.addFlag({ traceId: 'r3', kind: 'no_tool_score', callId: null, detail: 'd', at: 12_500 });
      await store.addFlag({ traceId: 'r2', kind: 'path_escape', callId: 'c1', detail: 'd', at: 11_300 });
      await store.addFlag({ traceId: 'r2', kind: 'path_escape', callId: 'c1', detail: 'd', at: 11_400 });
      const num = <T extends object>(rows: T[]) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v])));

      // Another run's rollout, call, grade and flag: in the run-free figures only.
      await store.beginCall(begin('other', 'c1', { tool: 'search', now: 12_050 }));
      await store.insertGrade(grade('other', { score: 0.5, createdAt: 12_060 }), { item: null, budgetLimit: 5, now: 12_060, run: 'other-run' });
      await store.addFlag({ traceId: 'other', kind: 'path_escape', callId: 'c1', detail: 'd', at: 12_070 });
      const all = await store.stats({ since: 10_000, until: 13_000, bucketMs: B });
      expect([all.calls, all.rolloutsStarted, all.grades, all.flags].map((rows) => rows.length)).toEqual([5, 3, 3, 2]);
      const otherRun = await store.stats({ since: 10_000, until: 13_000, bucketMs: B, run: 'other-run' });
      expect(num(otherRun.rolloutsStarted)).toEqual([{ t: 12_000, n: 1 }]);
      expect(num(otherRun.calls)).toMatchObject([{ t: 12_000, tool: 'search', n: 1 }]);
      expect(num(otherRun.grades)).toMatchObject([{ t: 12_000, graded: 1, score_sum: 0.5 }]);
      expect(num(otherRun.flags)).toMatchObject([{ kind: 'path_escape', rollouts: 1, events: 1 }]);
      for (const id of ['r1', 'r2', 'r3']) await store.labelRollout(id, 'main');
      const s = await store.stats({ since: 10_000, until: 13_000, bucketMs: B, run: 'main' });
      const le = (ms: number) => LATENCY_EDGES_MS.findIndex((e) => ms <= e);
      expect(num(s.calls).sort((a, b) => a.t - b.t || String(a.status).localeCompare(String(b.status)) || a.le - b.le)).toEqual([
        { t: 10_000, tool: 'search', status: 'budget_exceeded', le: -1, n: 1 },
        { t: 10_000, tool: 'search', status: 'ok', le: le(0.5), n: 1 },
        { t: 10_000, tool: 'search', status: 'ok', le: le(40), n: 1 },
        { t: 11_000, tool: 'shell', status: 'tool_error', le: LATENCY_EDGES_MS.length, n: 1 },
      ]);
      expect(num(s.rolloutsStarted).sort((a, b) => a.t - b.t)).toEqual([{ t: 10_000, n: 1 }, { t: 11_000, n: 1 }, { t: 12_000, n: 1 }]);
      expect(num(s.grades).sort((a, b) => a.t - b.t)).toEqual([
        { t: 11_000, grader: 'g', grader_version: 'v1', graded: 2, errors: 0, bad_rows: 0, score_sum: 0.8, tool_calls: 4, budget_exhausted: 1, no_tool_calls: 0 },
        { t: 12_000, grader: 'g', grader_version: 'v2', graded: 1, errors: 2, bad_rows: 1, score_sum: 1, tool_calls: 0, budget_exhausted: 0, no_tool_calls: 1 },
      ]);
      expect(num(s.flags).sort((a, b) => String(a.kind).localeCompare(String(b.kind)))).toEqual([
        { grader: 'g', grader_version: 'v2', kind: 'no_tool_score', rollouts: 1, events: 1 },
        { grader: 'g', grader_version: 'v1', kind: 'path_escape', rollouts: 1, events: 2 },
      ]);
    });
  });
}
