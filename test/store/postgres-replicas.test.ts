// What replicas coordinate through Postgres (src/store/pg-replicas.ts): sandbox placements (who
// creates a rollout's sandbox, where it is, which idle ones to remove) and the order of a rollout's
// serial calls across replicas; a replica that is gone (its session ended) never blocks the others.
import { expect, it } from 'vitest';
import type { PostgresStore } from '../../src/store/postgres.js';
import { describeIf } from '../helpers/require.js';
import { begin } from './contract.js';
import { openStore, postgresUnavailable, testSchema } from './postgres-db.js';

const unavailable = await postgresUnavailable();

const finish = (store: PostgresStore, traceId: string, callId: string) =>
  store.finishCall(traceId, callId, { output: 'done', status: 'ok', finishedAt: Date.now(), durationMs: 1, outputBytes: 4, truncated: false });

const settledWithin = async (p: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describeIf(unavailable === undefined, 'Postgres', unavailable ?? '')('replicas through Postgres', () => {
  it('lets one replica create a rollout\'s sandbox and shows the others where it is', async () => {
    const schema = testSchema();
    const [a, b] = [await openStore(schema, { instanceId: 'pod-a' }), await openStore(schema, { instanceId: 'pod-b' })];
    const [pa, pb] = [a.replicas.placements, b.replicas.placements];
    const claims = await Promise.all([pa.claim('trace_p', 'pod-a', 1), pb.claim('trace_p', 'pod-b', 1)]);
    expect(claims.map((c) => c.kind).sort()).toEqual(['busy', 'mine']);
    const winner = claims[0]!.kind === 'mine' ? 'pod-a' : 'pod-b';
    expect(await (winner === 'pod-a' ? pa : pb).place('trace_p', winner, 'engine-1', 'rft-sb_1', 2)).toBe(true);
    expect(await pa.claim('trace_p', 'pod-a', 3)).toEqual({ kind: 'placed', engine: 'engine-1', container: 'rft-sb_1', owner: winner });
    expect(await pb.get('trace_p')).toMatchObject({ owner: winner, engine: 'engine-1', container: 'rft-sb_1' });
    expect(await pa.containersOf(winner)).toEqual(new Set(['rft-sb_1']));
    await pb.release('trace_p', 'rft-sb_1', 'pod-b');
    expect(await pa.get('trace_p')).toBeUndefined();
  });

  it('hands an unfinished creation over when its replica is gone, and refuses the late record of the old one', async () => {
    const schema = testSchema();
    const a = await openStore(schema, { instanceId: 'pod-a' });
    const gone = await openStore(schema, { instanceId: 'pod-gone' });
    expect(await gone.replicas.placements.claim('trace_h', 'pod-gone', 1)).toEqual({ kind: 'mine' });
    expect(await a.replicas.placements.claim('trace_h', 'pod-a', 2)).toEqual({ kind: 'busy' });
    await gone.close(); // its session ends: its liveness lock is released
    expect(await a.replicas.placements.claim('trace_h', 'pod-a', 3)).toEqual({ kind: 'mine' });
    expect(await a.replicas.placements.place('trace_h', 'pod-gone', 'engine-1', 'rft-sb_late', 4)).toBe(false);
    expect(await a.replicas.placements.place('trace_h', 'pod-a', 'engine-2', 'rft-sb_new', 4)).toBe(true);
  });

  it('lists as idle this replica\'s unused sandboxes and those of gone replicas, never a live replica\'s', async () => {
    const schema = testSchema();
    const [a, b] = [await openStore(schema, { instanceId: 'pod-a' }), await openStore(schema, { instanceId: 'pod-b' })];
    const gone = await openStore(schema, { instanceId: 'pod-gone' });
    for (const [store, owner, trace] of [[a, 'pod-a', 'trace_a'], [b, 'pod-b', 'trace_b'], [gone, 'pod-gone', 'trace_g']] as const) {
      await store.replicas.placements.claim(trace, owner, 1_000);
      await store.replicas.placements.place(trace, owner, 'e', `c_${trace}`, 1_000);
    }
    await gone.close();
    await b.replicas.placements.touch('trace_a', 5_000); // used on another replica: not idle
    expect((await a.replicas.placements.idle('pod-a', 2_000)).map((p) => p.traceId)).toEqual(['trace_g']);
    expect((await a.replicas.placements.idle('pod-a', 6_000)).map((p) => p.traceId).sort()).toEqual(['trace_a', 'trace_g']);
  });

  it('runs a rollout\'s serial calls across replicas in seq order, and a gone replica\'s call does not block', async () => {
    const schema = testSchema();
    const [a, b] = [await openStore(schema, { instanceId: 'pod-a' }), await openStore(schema, { instanceId: 'pod-b' })];
    const first = await a.beginCall(begin('trace_s', 'c1', { tool: 'shell' }));
    const second = await b.beginCall(begin('trace_s', 'c2', { tool: 'shell' }));
    const other = await b.beginCall(begin('trace_s', 'c3', { tool: 'search' }));
    expect([first.call.seq, second.call.seq, other.call.seq]).toEqual([1, 2, 3]);
    const signal = new AbortController().signal;
    // c1 goes at once (nothing before it); c2 waits for c1; a non-serial tool never counts.
    await a.replicas.serialTurn('trace_s', 1, ['shell'], signal);
    const turn = b.replicas.serialTurn('trace_s', 2, ['shell'], signal);
    expect(await settledWithin(turn, 300)).toBe(false);
    await finish(a, 'trace_s', 'c1');
    expect(await settledWithin(turn, 10_000)).toBe(true); // polled every 25 ms: 10 s is for a loaded machine's Postgres
    await finish(b, 'trace_s', 'c2');

    const gone = await openStore(schema, { instanceId: 'pod-gone' });
    await gone.beginCall(begin('trace_s', 'c4', { tool: 'shell' }));
    const next = await a.beginCall(begin('trace_s', 'c5', { tool: 'shell' }));
    const blocked = a.replicas.serialTurn('trace_s', next.call.seq, ['shell'], signal);
    expect(await settledWithin(blocked, 300)).toBe(false);
    await gone.close(); // its running c4 will never finish: the turn passes it
    expect(await settledWithin(blocked, 10_000)).toBe(true);
  });

  it('closes a call left running by a gone replica (as its restart would), never a live replica\'s', async () => {
    const schema = testSchema();
    const [a, b] = [await openStore(schema, { instanceId: 'pod-a' }), await openStore(schema, { instanceId: 'pod-b' })];
    const gone = await openStore(schema, { instanceId: 'pod-gone' });
    await b.beginCall(begin('trace_o', 'on_b'));
    await gone.beginCall(begin('trace_o', 'on_gone'));
    expect(await a.replicas.interruptOrphan('trace_o', 'on_gone', 'interrupted', Date.now())).toBe(false);
    await gone.close();
    expect(await a.replicas.interruptOrphan('trace_o', 'on_b', 'interrupted', Date.now())).toBe(false);
    expect(await a.replicas.interruptOrphan('trace_o', 'on_gone', 'interrupted', Date.now())).toBe(true);
    expect(await a.getCall('trace_o', 'on_gone')).toMatchObject({ status: 'interrupted', output: 'interrupted' });
    expect(await a.getCall('trace_o', 'on_b')).toMatchObject({ status: 'running' });
    // Its cost went back: only on_b is charged.
    expect(await a.getBudget('trace_o', 0)).toMatchObject({ used: 1 });
  });

  it("un-begins a gone replica's call of an idempotent tool instead, so its retry runs it", async () => {
    const schema = testSchema();
    const a = await openStore(schema, { instanceId: 'pod-a' });
    const gone = await openStore(schema, { instanceId: 'pod-gone' });
    await gone.beginCall(begin('trace_p', 'read', { tool: 'reader' }));
    await gone.close();
    expect(await a.replicas.interruptOrphan('trace_p', 'read', 'interrupted', Date.now(), ['reader'])).toBe(true);
    expect(await a.getCall('trace_p', 'read')).toBeUndefined();
    expect(await a.getBudget('trace_p', 0)).toMatchObject({ used: 0 });
    expect(await a.beginCall(begin('trace_p', 'read', { tool: 'reader' }))).toMatchObject({ kind: 'started', budget: { used: 1 } });
  });
});
