// The Store contract: behaviours every store (SQLite, Postgres) must show identically, run by
// test/store/sqlite.test.ts and test/store/postgres.test.ts against a fresh, empty store each test.
import { describe, expect, it, onTestFinished } from 'vitest';
import { LIMIT_PLACEHOLDER, type BeginCallInput, type ImportedRollout, type NewGrade, type Store } from '../../src/store/types.js';
import { insightsContract } from '../stats/insights-contract.js';

export const begin = (traceId: string, callId: string, over: Partial<BeginCallInput> = {}): BeginCallInput => ({
  traceId, callId, tool: 't', arguments: '{}', argsHash: 'h', cost: 1, budgetLimit: 5, item: { q: 1 }, credential: null, now: Date.now(), overBudgetOutput: 'spent', ...over,
});

export const grade = (traceId: string, over: Partial<NewGrade> = {}): NewGrade => ({
  traceId, grader: 'g', graderVersion: 'v1', sampleHash: 'sh', sample: { output_text: 'answer', nested: [1, { a: null }] }, status: 'ok', score: 0.75,
  subscores: { exact: 1, length: 0.5 }, explanation: 'fine', error: null, credential: 'trainer', source: 'endpoint', createdAt: 1_000, durationMs: 3.5, ...over,
});

const finished = { status: 'ok' as const, finishedAt: 2_000, durationMs: 12.5, outputBytes: 6, truncated: false };

const imported = (traceId: string, over: Partial<ImportedRollout> = {}): ImportedRollout => ({
  traceId, createdAt: 100, updatedAt: 200, item: { question: 'q?' }, budget: { used: 3, limit: 7, exceeded: false },
  calls: [1, 2].map((seq) => ({ callId: `c${seq}`, seq, tool: 't', arguments: `{"n":${seq}}`, argsHash: `h${seq}`, output: `out ${seq}`, status: 'ok' as const, cost: 1.5, credential: 'k', startedAt: 100 + seq, finishedAt: 110 + seq, durationMs: 9.25, outputBytes: 5, truncated: seq === 2, sandbox: seq === 1 ? 'sb_0123456789abcdef' : null })),
  grades: [grade(traceId, { score: 0.2, createdAt: 150 }), grade(traceId, { score: null, status: 'error', error: 'boom', createdAt: 160 })].map(({ traceId: _t, ...g }) => g),
  ...over,
});

/** Runs the contract; `open` returns a new empty store (the suite closes it after each test). */
export function storeContract(label: string, open: () => Promise<Store>): void {
  const fresh = async () => {
    const store = await open();
    onTestFinished(() => store.close());
    return store;
  };

  describe(`${label}: calls and budget`, () => {
    it('starts the first call of a rollout with seq 1, stores the row and charges its cost', async () => {
      const store = await fresh();
      const r = await store.beginCall(begin('trace_a', 'c1', { cost: 2, item: { q: 'x', n: [1, 2] } }));
      expect(r).toMatchObject({ kind: 'started', call: { seq: 1, status: 'running', cost: 2, output: null }, budget: { used: 2, limit: 5, exceeded: false } });
      expect((await store.getRollout('trace_a'))?.item).toEqual({ q: 'x', n: [1, 2] });
    });

    it('numbers calls of a rollout in arrival order and lists them by seq', async () => {
      const store = await fresh();
      for (const id of ['z', 'a', 'm']) await store.beginCall(begin('trace_s', id));
      expect((await store.listCalls('trace_s')).map((c) => [c.callId, c.seq])).toEqual([['z', 1], ['a', 2], ['m', 3]]);
    });

    it('charges the budget atomically: parallel calls never admit more than the limit', async () => {
      const store = await fresh();
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => store.beginCall(begin('trace_x', `c${i}`))));
      expect(results.filter((r) => r.kind === 'started')).toHaveLength(5);
      expect(results.filter((r) => r.kind === 'over_budget')).toHaveLength(7);
      expect(new Set(results.map((r) => r.call.seq)).size).toBe(12);
      expect(await store.getBudget('trace_x', 0)).toEqual({ used: 5, limit: 5, exceeded: true });
    });

    it('records a refused call as budget_exceeded with the given output and no charge', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_o', 'c1', { budgetLimit: 1 }));
      const r = await store.beginCall(begin('trace_o', 'c2', { overBudgetOutput: 'no budget left' }));
      expect(r).toMatchObject({ kind: 'over_budget', call: { status: 'budget_exceeded', cost: 0, output: 'no budget left', outputBytes: 14, durationMs: 0 } });
      expect(await store.getCall('trace_o', 'c2')).toEqual(r.call);
    });

    it('writes the limit it enforced (the rollout\'s) into a refused call\'s output, not the one the call asked for', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_q', 'c1', { budgetLimit: 1 }));
      const r = await store.beginCall(begin('trace_q', 'c2', { budgetLimit: 50, overBudgetOutput: `may use ${LIMIT_PLACEHOLDER} unit(s) é` }));
      expect(r).toMatchObject({ kind: 'over_budget', call: { output: 'may use 1 unit(s) é', outputBytes: Buffer.byteLength('may use 1 unit(s) é') } });
      expect(await store.getCall('trace_q', 'c2')).toEqual(r.call);
    });

    it('keeps the budget limit of the call that created the rollout', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_l', 'c1', { budgetLimit: 2 }));
      await store.beginCall(begin('trace_l', 'c2', { budgetLimit: 100 }));
      expect((await store.beginCall(begin('trace_l', 'c3', { budgetLimit: 100 }))).kind).toBe('over_budget');
    });

    it('keeps the dataset row of the call that created the rollout', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_k', 'c1', { item: { v: 1 } }));
      await store.beginCall(begin('trace_k', 'c2', { item: { v: 2 } }));
      await store.ensureRollout('trace_k', { v: 3 }, 5, 0);
      expect((await store.getRollout('trace_k'))?.item).toEqual({ v: 1 });
    });

    it('charges fractional costs exactly', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_f', 'c1', { cost: 0.5, budgetLimit: 1 }));
      await store.beginCall(begin('trace_f', 'c2', { cost: 0.25, budgetLimit: 1 }));
      expect(await store.getBudget('trace_f', 0)).toEqual({ used: 0.75, limit: 1, exceeded: false });
    });

    it('tells a replay from a conflicting reuse of a call id (other arguments or other tool)', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_r', 'c1'));
      expect((await store.beginCall(begin('trace_r', 'c1'))).kind).toBe('existing');
      expect((await store.beginCall(begin('trace_r', 'c1', { argsHash: 'other' }))).kind).toBe('conflict');
      expect((await store.beginCall(begin('trace_r', 'c1', { tool: 'other' }))).kind).toBe('conflict');
      expect(await store.getBudget('trace_r', 0)).toMatchObject({ used: 1 });
    });

    it('admits one of several simultaneous uses of one call id and answers the others with it', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_dup', 'c0'));
      const results = await Promise.all([1, 2, 3].map(() => store.beginCall(begin('trace_dup', 'c1'))));
      expect(results.map((r) => r.kind).sort()).toEqual(['existing', 'existing', 'started']);
      expect(new Set(results.map((r) => r.call.seq))).toEqual(new Set([2]));
      expect(await store.getBudget('trace_dup', 0)).toMatchObject({ used: 2 });
    });

    it('records how a call finished, once: a second finish does not overwrite it', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_d', 'c1'));
      await store.finishCall('trace_d', 'c1', { ...finished, output: 'result', truncated: true });
      await store.finishCall('trace_d', 'c1', { ...finished, output: 'late', status: 'timeout' });
      expect(await store.getCall('trace_d', 'c1')).toMatchObject({ output: 'result', status: 'ok', finishedAt: 2_000, durationMs: 12.5, outputBytes: 6, truncated: true });
    });

    it('records the sandbox a call used with its finish (null when it used none)', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_sb', 'c1'));
      await store.beginCall(begin('trace_sb', 'c2'));
      await store.finishCall('trace_sb', 'c1', { ...finished, output: 'in a sandbox', sandbox: 'sb_0123456789abcdef' });
      await store.finishCall('trace_sb', 'c2', { ...finished, output: 'none' });
      expect((await store.listCalls('trace_sb')).map((c) => c.sandbox)).toEqual(['sb_0123456789abcdef', null]);
    });

    it('stores any string exactly, NUL bytes and astral characters included', async () => {
      const store = await fresh();
      const odd = 'a\u0000b \u0001x ü 🦀 "q" \\ \n';
      await store.beginCall(begin(`trace_${odd}`, `call_${odd}`, { arguments: odd, credential: odd }));
      await store.finishCall(`trace_${odd}`, `call_${odd}`, { ...finished, output: odd });
      expect(await store.getCall(`trace_${odd}`, `call_${odd}`)).toMatchObject({ traceId: `trace_${odd}`, callId: `call_${odd}`, arguments: odd, output: odd, credential: odd });
      expect((await store.beginCall(begin(`trace_${odd}`, `call_${odd}`, { arguments: odd }))).kind).toBe('existing');
    });

    it('answers unknown rollouts and calls with defaults, not errors', async () => {
      const store = await fresh();
      expect(await store.getCall('nope', 'c1')).toBeUndefined();
      expect(await store.listCalls('nope')).toEqual([]);
      expect(await store.getBudget('nope', 9)).toEqual({ used: 0, limit: 9, exceeded: false });
      expect(await store.getRollout('nope')).toBeUndefined();
    });

    it('creates a rollout for a grade without calls, and never overwrites an existing one', async () => {
      const store = await fresh();
      await store.ensureRollout('trace_e', { a: 1 }, 4, 500);
      await store.ensureRollout('trace_e', { a: 2 }, 8, 600);
      expect(await store.getRollout('trace_e')).toMatchObject({ item: { a: 1 }, budgetLimit: 4, createdAt: 500, calls: 0 });
    });

    it('takes the dataset row from a grade when the tool calls carried an empty one', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_empty', 'c1', { item: {} }));
      await store.ensureRollout('trace_empty', { reference_answer: '42' }, 4, 500);
      expect((await store.getRollout('trace_empty'))?.item).toEqual({ reference_answer: '42' });
      await store.ensureRollout('trace_empty', { reference_answer: 'other' }, 4, 600);
      expect((await store.getRollout('trace_empty'))?.item).toEqual({ reference_answer: '42' });
    });

    it('interrupts calls left running, and only those', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_i', 'running'));
      await store.beginCall(begin('trace_i', 'done'));
      await store.finishCall('trace_i', 'done', { ...finished, output: 'fine' });
      expect(await store.markInterrupted('was interrupted', 3_000)).toBe(1);
      expect(await store.getCall('trace_i', 'running')).toMatchObject({ status: 'interrupted', output: 'was interrupted', finishedAt: 3_000 });
      expect(await store.getCall('trace_i', 'done')).toMatchObject({ status: 'ok', output: 'fine' });
      expect(await store.markInterrupted('again', 4_000)).toBe(0);
    });

    it("gives back what the calls it closes were charged, and un-begins the idempotent tools' calls so their retry runs them", async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_r', 'done', { cost: 1 }));
      await store.finishCall('trace_r', 'done', { ...finished, output: 'fine' });
      await store.beginCall(begin('trace_r', 'cut', { cost: 2 }));
      await store.beginCall(begin('trace_r', 'read', { tool: 'reader', cost: 1 }));
      await store.beginCall(begin('trace_r2', 'cut', { cost: 1 }));
      expect(await store.getBudget('trace_r', 0)).toMatchObject({ used: 4 });
      expect(await store.markInterrupted('cut', 3_000, ['reader'])).toBe(2);
      expect(await store.getCall('trace_r', 'cut')).toMatchObject({ status: 'interrupted', output: 'cut', cost: 0 });
      expect(await store.getCall('trace_r', 'read')).toBeUndefined();
      expect(await store.getBudget('trace_r', 0)).toMatchObject({ used: 1 });
      expect(await store.getBudget('trace_r2', 0)).toMatchObject({ used: 0 });
      expect(await store.rolloutTally('trace_r')).toEqual({ calls: 2, budgetExceeded: false });
      // The idempotent call's retry starts it again, charged once.
      expect(await store.beginCall(begin('trace_r', 'read', { tool: 'reader', cost: 1 }))).toMatchObject({ kind: 'started', budget: { used: 2 } });
      expect((await store.beginCall(begin('trace_r', 'cut', { cost: 2 }))).kind).toBe('existing');
    });
  });

  describe(`${label}: which process made a rollout's sandbox`, () => {
    it('records the first claim of a rollout and answers its boot to every later claim, whoever makes it', async () => {
      const store = await fresh();
      expect(await store.sandboxBoot('trace_sb')).toBeUndefined();
      expect(await store.claimSandbox('trace_sb', 'boot-1', 1)).toBe('boot-1');
      expect(await store.sandboxBoot('trace_sb')).toBe('boot-1');
      expect(await store.claimSandbox('trace_sb', 'boot-1', 2)).toBe('boot-1');
      expect(await store.claimSandbox('trace_sb', 'boot-2', 3)).toBe('boot-1');
      expect(await store.claimSandbox('trace_sb_other', 'boot-2', 4)).toBe('boot-2');
      const racing = await Promise.all(['a', 'b', 'c'].map((b) => store.claimSandbox('trace_sb_race', b, 5)));
      expect(new Set(racing).size).toBe(1);
    });
  });

  describe(`${label}: un-beginning a call that failed on our side`, () => {
    it('removes the running row and gives its cost back, so a rollout with budget 1 can still make its call', async () => {
      const store = await fresh();
      const first = await store.beginCall(begin('trace_u', 'c1', { budgetLimit: 1, cost: 1 }));
      expect(first.kind).toBe('started');
      expect(await store.unbeginCall('trace_u', 'c1', first.call.seq, 5_000)).toBe(true);
      expect(await store.getCall('trace_u', 'c1')).toBeUndefined();
      expect(await store.getBudget('trace_u', 0)).toEqual({ used: 0, limit: 1, exceeded: false });
      expect(await store.rolloutTally('trace_u')).toEqual({ calls: 0, budgetExceeded: false });
      // The same call id is free: the retry starts it, charged once, with a seq never used before.
      const retry = await store.beginCall(begin('trace_u', 'c1', { budgetLimit: 1, cost: 1 }));
      expect(retry).toMatchObject({ kind: 'started', budget: { used: 1, limit: 1 } });
      expect(retry.call.seq).toBeGreaterThan(first.call.seq);
      expect((await store.beginCall(begin('trace_u', 'c2', { budgetLimit: 1 }))).kind).toBe('over_budget');
    });

    it("touches only this attempt's running row: not a finished call, not another attempt, not twice", async () => {
      const store = await fresh();
      const a = await store.beginCall(begin('trace_v', 'done', { cost: 2 }));
      await store.finishCall('trace_v', 'done', { ...finished, output: 'kept' });
      expect(await store.unbeginCall('trace_v', 'done', a.call.seq, 1)).toBe(false);
      expect(await store.getCall('trace_v', 'done')).toMatchObject({ status: 'ok', output: 'kept' });

      const b = await store.beginCall(begin('trace_v', 'c', { cost: 1 }));
      expect(await store.unbeginCall('trace_v', 'c', b.call.seq, 1)).toBe(true);
      const again = await store.beginCall(begin('trace_v', 'c', { cost: 1 }));
      // The first attempt's un-begin, repeated (a lost reply), leaves the retry's attempt alone.
      expect(await store.unbeginCall('trace_v', 'c', b.call.seq, 1)).toBe(false);
      expect(await store.getCall('trace_v', 'c')).toMatchObject({ status: 'running', seq: again.call.seq });

      await store.markInterrupted('interrupted', 2);
      expect(await store.unbeginCall('trace_v', 'c', again.call.seq, 3)).toBe(false);
      expect(await store.getCall('trace_v', 'c')).toMatchObject({ status: 'interrupted' });
      // The interrupted call's cost came back (a crash is never the model's to pay for).
      expect(await store.getBudget('trace_v', 0)).toEqual({ used: 2, limit: 5, exceeded: false });
      expect(await store.unbeginCall('trace_none', 'c', 1, 3)).toBe(false);
    });

    it('keeps the budget exact when un-begins race admissions of the same rollout', async () => {
      const store = await fresh();
      const started = await Promise.all(Array.from({ length: 5 }, (_, i) => store.beginCall(begin('trace_w', `a${i}`))));
      const [undone, more] = await Promise.all([
        Promise.all(started.map((r) => store.unbeginCall('trace_w', r.call.callId, r.call.seq, 9))),
        Promise.all(Array.from({ length: 8 }, (_, i) => store.beginCall(begin('trace_w', `b${i}`)))),
      ]);
      expect(undone).toEqual([true, true, true, true, true]);
      const admitted = more.filter((r) => r.kind === 'started').length;
      expect(admitted).toBeGreaterThanOrEqual(0);
      expect(await store.getBudget('trace_w', 0)).toMatchObject({ used: admitted });
      expect((await store.listCalls('trace_w')).filter((c) => c.status === 'running')).toHaveLength(admitted);
    });
  });

  describe(`${label}: grades`, () => {
    it('stores a grade with its sample and subscores and sets the rollout last score', async () => {
      const store = await fresh();
      await store.ensureRollout('trace_g', null, 5, 1);
      const { record: g, tally } = await store.insertGrade(grade('trace_g'));
      expect(tally).toEqual({ calls: 0, budgetExceeded: false });
      expect(g).toMatchObject({ ...grade('trace_g'), id: expect.any(Number) });
      expect(await store.listGrades('trace_g')).toEqual([g]);
      expect(await store.getRollout('trace_g')).toMatchObject({ lastScore: 0.75, updatedAt: 1_000 });
    });

    it('keeps the last score when a grade fails', async () => {
      const store = await fresh();
      await store.ensureRollout('trace_g', null, 5, 1);
      await store.insertGrade(grade('trace_g', { score: 0.4 }));
      await store.insertGrade(grade('trace_g', { status: 'error', score: null, error: 'grader crashed', createdAt: 2_000 }));
      expect(await store.getRollout('trace_g')).toMatchObject({ lastScore: 0.4, updatedAt: 2_000 });
      expect((await store.listGrades('trace_g')).map((g) => g.error)).toEqual([null, 'grader crashed']);
    });

    it('keeps scores and durations to the last bit, whichever way the rollout is read', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_n', 'c1'));
      await store.finishCall('trace_n', 'c1', { ...finished, output: 'x', durationMs: 1234.5678901234567 });
      await store.insertGrade(grade('trace_n', { score: 0.1 + 0.2, durationMs: 1e-7, subscores: { a: 1 / 3 } }));
      const r = await store.getRollout('trace_n');
      expect(r?.callsList[0]?.durationMs).toBe(1234.5678901234567);
      expect(r?.grades[0]).toMatchObject({ score: 0.30000000000000004, durationMs: 1e-7, subscores: { a: 1 / 3 } });
      expect(r?.lastScore).toBe(0.30000000000000004);
    });

    it('records a grade with its rollout: created if absent, an empty dataset row filled, a non-empty one kept', async () => {
      const store = await fresh();
      await store.insertGrade(grade('trace_gr', { createdAt: 700 }), { item: { reference_answer: '42' }, budgetLimit: 4, now: 600 });
      expect(await store.getRollout('trace_gr')).toMatchObject({ item: { reference_answer: '42' }, budgetLimit: 4, createdAt: 600, updatedAt: 700, lastScore: 0.75, calls: 0 });
      await store.insertGrade(grade('trace_gr', { score: 0.5, createdAt: 800 }), { item: { reference_answer: 'other' }, budgetLimit: 9, now: 800 });
      expect(await store.getRollout('trace_gr')).toMatchObject({ item: { reference_answer: '42' }, budgetLimit: 4, createdAt: 600, lastScore: 0.5 });
      await store.beginCall(begin('trace_ge', 'c1', { item: {} }));
      await store.insertGrade(grade('trace_ge'), { item: { reference_answer: '7' }, budgetLimit: 9, now: 900 });
      expect(await store.getRollout('trace_ge')).toMatchObject({ item: { reference_answer: '7' }, budgetLimit: 5, budgetUsed: 1, calls: 1 });
      expect(await store.listGrades('trace_gr')).toHaveLength(2);
    });

    it("gives a rollout the grade's door only if the grade's commit creates it", async () => {
      const store = await fresh();
      await store.insertGrade(grade('trace_gd'), { item: {}, budgetLimit: 4, now: 600, door: 'reward' });
      expect(await store.getRollout('trace_gd')).toMatchObject({ door: 'reward', lastScore: 0.75 });
      await store.openRollout('trace_gk', 'nemo-gym', { row: 1 }, 7, 600);
      await store.insertGrade(grade('trace_gk'), { item: { row: 1 }, budgetLimit: 4, now: 700, door: 'reward' });
      expect(await store.getRollout('trace_gk')).toMatchObject({ door: 'nemo-gym', lastScore: 0.75 });
      await store.insertGrade(grade('trace_gn'), { item: {}, budgetLimit: 4, now: 600 });
      expect((await store.getRollout('trace_gn'))?.door).toBeUndefined();
      expect((await store.listRollouts({ limit: 10, filter: { door: 'reward' } })).rollouts.map((r) => r.traceId)).toEqual(['trace_gd']);
    });

    it("records a grade's no-tool-call flag in its commit only if the rollout has no recorded call, and returns its tally", async () => {
      const store = await fresh();
      const flag = (traceId: string) => ({ traceId, kind: 'no_tool_score' as const, callId: null, detail: 'g scored 0.75', at: 900 });
      const rollout = (traceId: string) => ({ item: { tools: ['t'] }, budgetLimit: 5, now: 900, flagIfNoCalls: flag(traceId) });
      expect((await store.insertGrade(grade('trace_nf'), rollout('trace_nf'))).tally).toEqual({ calls: 0, budgetExceeded: false });
      expect(await store.getRollout('trace_nf')).toMatchObject({ flags: ['no_tool_score'], integrityFlags: [{ kind: 'no_tool_score', events: 1, detail: 'g scored 0.75' }] });
      // the trainer's retry of the grade with another sample: counted on the same flag
      await store.insertGrade(grade('trace_nf', { sampleHash: 's2' }), rollout('trace_nf'));
      expect((await store.getRollout('trace_nf'))?.integrityFlags).toMatchObject([{ kind: 'no_tool_score', events: 2 }]);
      // a rollout with a call (over its budget, still recorded): no flag
      await store.beginCall(begin('trace_wf', 'c1', { cost: 9 }));
      expect((await store.insertGrade(grade('trace_wf'), rollout('trace_wf'))).tally).toEqual({ calls: 1, budgetExceeded: true });
      expect(await store.getRollout('trace_wf')).toMatchObject({ flags: [], integrityFlags: [] });
    });

    it('finds the newest ok grade for the same grader version and sample only', async () => {
      const store = await fresh();
      await store.insertGrade(grade('trace_h', { score: 0.1 }));
      const { record: newest, tally } = await store.insertGrade(grade('trace_h', { score: 0.2 }));
      expect(tally).toBeUndefined(); // no rollout row: a grade without one (the store's callers always give one)
      await store.insertGrade(grade('trace_h', { status: 'error', score: null }));
      expect(await store.findGrade('trace_h', 'g', 'v1', 'sh')).toMatchObject({ id: newest.id, score: 0.2 });
      expect(await store.findGrade('trace_h', 'g', 'v2', 'sh')).toBeUndefined();
      expect(await store.findGrade('trace_h', 'g', 'v1', 'other')).toBeUndefined();
    });
  });

  describe(`${label}: listing, reading and importing rollouts`, () => {
    it('records the door a rollout came through: agent-rft unless a door opened it, and filters the list by it', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_rft', 'c1'));
      await store.openRollout('trace_gym', 'nemo-gym', { row: 1 }, 7, 10);
      await store.beginCall(begin('trace_gym', 'c1'));
      expect((await store.getRollout('trace_rft'))?.door).toBeUndefined();
      const gym = await store.getRollout('trace_gym');
      expect(gym).toMatchObject({ door: 'nemo-gym', item: { row: 1 }, budgetLimit: 7, calls: 1 });
      const list = async (door?: string) => (await store.listRollouts({ limit: 10, filter: { door } })).rollouts.map((r) => [r.traceId, r.door ?? 'agent-rft']);
      expect(await list('nemo-gym')).toEqual([['trace_gym', 'nemo-gym']]);
      expect(await list('agent-rft')).toEqual([['trace_rft', 'agent-rft']]);
      expect((await list()).length).toBe(2);
      expect(await store.importRollout(imported('trace_imported', { door: 'nemo-gym' }))).toBe('imported');
      expect((await store.getRollout('trace_imported'))?.door).toBe('nemo-gym');
    });

    it("keeps a rollout's first run label (a call's, a grade's or a door's), filters the list by it, and exports and imports it", async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_a', 'c1'));
      await store.labelRollout('trace_a', 'baseline');
      await store.labelRollout('trace_a', 'later'); // the first label stays
      await store.insertGrade(grade('trace_a'), { item: null, budgetLimit: 5, now: 2, run: 'other' });
      await store.insertGrade(grade('trace_b'), { item: null, budgetLimit: 5, now: 2, run: 'job-1' }); // created by its grade
      await store.beginCall(begin('trace_c', 'c1'));
      await store.insertGrade(grade('trace_c'), { item: null, budgetLimit: 5, now: 2, run: 'job-1' }); // labelled by its grade
      await store.openRollout('trace_d', 'nemo-gym', null, 5, 3, 'gym run');
      await store.beginCall(begin('trace_none', 'c1'));
      expect((await store.getRollout('trace_a'))?.run).toBe('baseline');
      expect((await store.getRollout('trace_none'))?.run).toBeUndefined();
      const list = async (run?: string) => (await store.listRollouts({ limit: 10, filter: { run } })).rollouts.map((r) => [r.traceId, r.run]).sort();
      expect(await list('job-1')).toEqual([['trace_b', 'job-1'], ['trace_c', 'job-1']]);
      expect(await list('gym run')).toEqual([['trace_d', 'gym run']]);
      expect(await list('baseline')).toEqual([['trace_a', 'baseline']]);
      expect((await list()).length).toBe(5);
      expect(await store.importRollout(imported('trace_imported', { run: 'imported run' }))).toBe('imported');
      expect((await store.getRollout('trace_imported'))?.run).toBe('imported run');
    });

    it('pages rollouts newest first with a base64url "created_at|trace_id" cursor, ties broken by trace_id', async () => {
      const store = await fresh();
      for (const [id, at] of [['b', 10], ['a', 10], ['c', 20], ['d', 5], ['e', 10]] as const) await store.ensureRollout(id, null, 5, at);
      const first = await store.listRollouts({ limit: 2 });
      expect(first.rollouts.map((r) => r.traceId)).toEqual(['c', 'e']);
      expect(Buffer.from(first.nextCursor!, 'base64url').toString()).toBe('10|e');
      const second = await store.listRollouts({ limit: 2, cursor: first.nextCursor! });
      expect(second.rollouts.map((r) => r.traceId)).toEqual(['b', 'a']);
      const third = await store.listRollouts({ limit: 2, cursor: second.nextCursor! });
      expect(third).toEqual({ rollouts: [expect.objectContaining({ traceId: 'd' })], nextCursor: null });
    });

    it('answers a cursor it never issued with an empty page', async () => {
      const store = await fresh();
      await store.ensureRollout('a', null, 5, 10);
      for (const cursor of ['garbage', Buffer.from('x|y').toString('base64url')]) {
        expect(await store.listRollouts({ limit: 5, cursor })).toEqual({ rollouts: [], nextCursor: null });
      }
    });

    it('lists only rollouts updated since the given time, with call counts, budget and last score', async () => {
      const store = await fresh();
      await store.ensureRollout('old', null, 5, 100);
      await store.beginCall(begin('new', 'c1', { now: 900 }));
      await store.beginCall(begin('new', 'c2', { now: 950 }));
      await store.insertGrade(grade('new', { createdAt: 1_000, score: 0.5 }));
      const page = await store.listRollouts({ limit: 10, since: 900 });
      expect(page.rollouts).toEqual([
        {
          traceId: 'new', createdAt: 900, updatedAt: 1_000, budgetLimit: 5, budgetUsed: 2, budgetExceeded: false, calls: 2, lastScore: 0.5,
          lastGrader: 'g', lastGraderVersion: 'v1', flags: [],
        },
      ]);
    });

    it('reads a whole rollout: summary, item, calls by seq and grades', async () => {
      const store = await fresh();
      await store.beginCall(begin('trace_w', 'c1', { now: 10 }));
      await store.beginCall(begin('trace_w', 'c2', { now: 11 }));
      await store.finishCall('trace_w', 'c2', { ...finished, output: 'two' });
      await store.insertGrade(grade('trace_w'));
      const r = await store.getRollout('trace_w');
      expect(r).toMatchObject({ traceId: 'trace_w', item: { q: 1 }, calls: 2, budgetUsed: 2, lastScore: 0.75 });
      expect(r?.callsList).toEqual(await store.listCalls('trace_w'));
      expect(r?.grades).toEqual(await store.listGrades('trace_w'));
    });

    it('imports a rollout once, exactly as given, and continues its seq after the imported calls', async () => {
      const store = await fresh();
      expect(await store.importRollout(imported('trace_m'))).toBe('imported');
      expect(await store.importRollout(imported('trace_m', { item: { other: true } }))).toBe('exists');
      const r = await store.getRollout('trace_m');
      const src = imported('trace_m');
      expect(r).toMatchObject({ createdAt: 100, updatedAt: 200, item: { question: 'q?' }, budgetUsed: 3, budgetLimit: 7, budgetExceeded: false, calls: 2, lastScore: 0.2 });
      expect(r?.callsList).toEqual(src.calls.map((c) => ({ ...c, traceId: 'trace_m' })));
      expect(r?.grades.map(({ id: _id, ...g }) => g)).toEqual(src.grades.map((g) => ({ ...g, traceId: 'trace_m' })));
      expect((await store.beginCall(begin('trace_m', 'c3'))).call.seq).toBe(3);
      expect(await store.rolloutTally('trace_m')).toEqual({ calls: 3, budgetExceeded: false });
    });

    it('keeps a failed import out without losing the writes around it', async () => {
      const store = await fresh();
      const good = store.beginCall(begin('trace_a', 'c1'));
      const dup = imported('trace_b');
      const bad = store.importRollout({ ...dup, calls: [dup.calls[0]!, { ...dup.calls[1]!, callId: 'c1' }] });
      const after = store.beginCall(begin('trace_a', 'c2'));
      await expect(bad).rejects.toThrow(/UNIQUE|duplicate key/);
      expect((await good).kind).toBe('started');
      expect((await after).kind).toBe('started');
      expect(await store.getRollout('trace_b')).toBeUndefined();
      expect((await store.listCalls('trace_a')).map((c) => c.callId)).toEqual(['c1', 'c2']);
    });
  });

  describe(`${label}: webhook ids and health`, () => {
    it('accepts a webhook id again with the same body (a retry), and refuses it with another until it expires', async () => {
      const store = await fresh();
      expect(await store.rememberWebhookId('msg_1', 'h1', 1000, 0)).toBe(true);
      expect(await store.rememberWebhookId('msg_1', 'h2', 1000, 500)).toBe(false);
      // The retry extends the entry to its own expiry.
      expect(await store.rememberWebhookId('msg_1', 'h1', 1500, 600)).toBe(true);
      expect(await store.rememberWebhookId('msg_1', 'h2', 2000, 1200)).toBe(false);
      expect(await store.rememberWebhookId('msg_1', 'h2', 3000, 1500)).toBe(true);
      expect(await store.rememberWebhookId('msg_1', 'h1', 5000, 2000)).toBe(false);
    });

    it('of many simultaneous uses of one webhook id, admits those carrying the first body only', async () => {
      const store = await fresh();
      const bodies = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 'hA' : 'hB'));
      const results = await Promise.all(bodies.map((h) => store.rememberWebhookId('msg_race', h, 10_000, 0)));
      const admitted = new Set(bodies.filter((_, i) => results[i]));
      expect(admitted.size).toBe(1);
      expect(results.filter(Boolean)).toHaveLength(10);
    });

    it('pings by writing, and refuses work after close', async () => {
      const store = await fresh();
      await expect(store.ping()).resolves.toBeUndefined();
      await store.close();
      await expect(store.ping()).rejects.toThrow();
      await expect(store.close()).resolves.toBeUndefined();
    });
  });

  insightsContract(label, fresh);
}
