import { describe, expect, it, vi } from 'vitest';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { describeIf } from '../helpers/require.js';
import { storeContract, begin, grade } from './contract.js';
import { databaseUrl, openStore, postgresUnavailable, randomSchema, testSchema } from './postgres-db.js';

const unavailable = await postgresUnavailable();
const describePg = describeIf(unavailable === undefined, 'Postgres', unavailable ?? '');

describePg('PostgresStore', () => {
  storeContract('PostgresStore', async () => openStore(testSchema()));
});

describePg('PostgresStore across replicas (two pools on one database)', () => {
  it('admits exactly 10 of 50 calls raced from two replicas on one rollout with budget 10', async () => {
    const schema = testSchema();
    const [a, b] = [await openStore(schema), await openStore(schema)];
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 ? a : b).beginCall(begin('trace_race', `c${i}`, { budgetLimit: 10 }))),
    );
    expect(results.filter((r) => r.kind === 'started')).toHaveLength(10);
    expect(results.filter((r) => r.kind === 'over_budget')).toHaveLength(40);
    expect(results.map((r) => r.call.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(await b.getBudget('trace_race', 0)).toEqual({ used: 10, limit: 10, exceeded: true });
  });

  it('answers a retry on the other replica with the recorded call, or a conflict if its arguments differ', async () => {
    const schema = testSchema();
    const [a, b] = [await openStore(schema), await openStore(schema)];
    const first = await a.beginCall(begin('trace_retry', 'c1'));
    expect(await b.beginCall(begin('trace_retry', 'c1'))).toEqual({ kind: 'existing', call: first.call });
    expect((await b.beginCall(begin('trace_retry', 'c1', { argsHash: 'changed' }))).kind).toBe('conflict');
    expect(await a.getBudget('trace_retry', 0)).toMatchObject({ used: 1 });
  });

  it('refuses on one replica a webhook id the other has seen with another body, and admits one of two simultaneous different uses', async () => {
    const schema = testSchema();
    const [a, b] = [await openStore(schema), await openStore(schema)];
    expect(await a.rememberWebhookId('msg_x', 'h1', 10_000, 0)).toBe(true);
    expect(await b.rememberWebhookId('msg_x', 'h2', 10_000, 100)).toBe(false);
    expect(await b.rememberWebhookId('msg_x', 'h1', 10_000, 100)).toBe(true);
    const both = await Promise.all([a.rememberWebhookId('msg_y', 'h1', 10_000, 0), b.rememberWebhookId('msg_y', 'h2', 10_000, 0)]);
    expect(both.filter(Boolean)).toHaveLength(1);
  });

  it('interrupts at boot only the calls the booting replica started', async () => {
    const schema = testSchema();
    const [a, b] = [await openStore(schema, { instanceId: 'pod-a' }), await openStore(schema, { instanceId: 'pod-b' })];
    await a.beginCall(begin('trace_boot', 'on_a'));
    await b.beginCall(begin('trace_boot', 'on_b'));
    const restartedA = await openStore(schema, { instanceId: 'pod-a' });
    expect(await restartedA.markInterrupted('interrupted', Date.now())).toBe(1);
    expect(await b.getCall('trace_boot', 'on_a')).toMatchObject({ status: 'interrupted' });
    expect(await b.getCall('trace_boot', 'on_b')).toMatchObject({ status: 'running' });
  });

  it('also interrupts running calls of any replica that are older than the orphan age (their replica is gone)', async () => {
    const schema = testSchema();
    const gone = await openStore(schema, { instanceId: 'pod-gone' });
    const now = Date.now();
    await gone.beginCall(begin('trace_orphan', 'ancient', { now: now - 2 * 3_600_000 }));
    await gone.beginCall(begin('trace_orphan', 'recent', { now: now - 1_000 }));
    const other = await openStore(schema, { instanceId: 'pod-new', orphanAfterMs: 3_600_000 });
    expect(await other.markInterrupted('interrupted', now)).toBe(1);
    expect((await other.listCalls('trace_orphan')).map((c) => [c.callId, c.status])).toEqual([['ancient', 'interrupted'], ['recent', 'running']]);
  });

  it('creates the schema once when several replicas boot at the same time', async () => {
    const schema = testSchema();
    const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(schema, { poolSize: 1 })));
    await Promise.all(stores.map((s, i) => s.beginCall(begin('trace_boot_race', `c${i}`))));
    expect(await stores[0]!.listCalls('trace_boot_race')).toHaveLength(4);
  });

  it('boots a replica while others admit, finish and interrupt calls: no deadlock, no failed call (CI: "deadlock detected" at a third replica\'s boot)', async () => {
    // The CI failure: a booting replica's schema statements took the rollouts table, then waited for
    // calls, while another replica's boot-time interrupt (markInterrupted) held calls and waited for
    // rollouts. Here one replica serves calls and another runs that interrupt in a loop.
    const schema = testSchema();
    const serving = await openStore(schema, { instanceId: 'pod-serving' });
    const interrupting = await openStore(schema, { instanceId: 'pod-interrupting' });
    let stop = false;
    let admitted = 0;
    let interrupts = 0;
    const work = Promise.all([
      ...Array.from({ length: 4 }, async (_, w) => {
        for (let i = 0; !stop; i++) {
          const trace = `trace_busy_${(w + i) % 4}`;
          const r = await serving.beginCall(begin(trace, `w${w}_c${i}`, { budgetLimit: 1_000_000 }));
          expect(r.kind).toBe('started');
          await serving.finishCall(trace, `w${w}_c${i}`, { status: 'ok', output: 'out', finishedAt: Date.now(), durationMs: 1, outputBytes: 3, truncated: false });
          admitted++;
        }
      }),
      ...Array.from({ length: 2 }, async () => {
        for (; !stop; interrupts++) await interrupting.markInterrupted('interrupted', Date.now());
      }),
    ]);
    try {
      for (let i = 0; i < 30; i++) {
        const booted = await PostgresStore.open({ url: databaseUrl, schema, instanceId: `pod-boot-${i}`, poolSize: 2 });
        try {
          expect(await booted.getBudget('trace_busy_0', 0)).toMatchObject({ limit: 1_000_000 });
        } finally {
          await booted.close();
        }
      }
    } finally {
      stop = true;
      await work;
    }
    expect(admitted).toBeGreaterThan(0);
    expect(interrupts).toBeGreaterThan(0);
  });

  it('keeps its tables in its own schema, invisible to a store on another schema', async () => {
    const own = testSchema();
    const [a, b] = [await openStore(own), await openStore(testSchema())];
    await a.beginCall(begin('trace_own', 'c1'));
    expect(await b.getRollout('trace_own')).toBeUndefined();
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const { rows } = await client.query<{ n: string }>("SELECT count(*) AS n FROM pg_tables WHERE tablename = 'calls' AND schemaname = ANY($1)", [
      [own],
    ]);
    await client.end();
    expect(rows[0]?.n).toBe('1');
  });

  it('counts the recorded calls of a schema made before rollouts kept their count, once, at boot', async () => {
    const schema = testSchema();
    const first = await openStore(schema);
    const b = await first.beginCall(begin('trace_old', 'ours'));
    await first.unbeginCall('trace_old', 'ours', b.call.seq, 1);
    for (const id of ['c1', 'c2']) await first.beginCall(begin('trace_old', id));
    await first.ensureRollout('trace_none', null, 5, 1);
    // What an older version's schema looks like: no call_count column (next_seq says 4, 2 calls
    // recorded), and no record of the statements applied (schema_parts came later still).
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`ALTER TABLE "${schema}".rollouts DROP COLUMN call_count; DROP TABLE "${schema}".schema_parts`);
    await client.end();
    const store = await openStore(schema);
    expect(await store.rolloutTally('trace_old')).toEqual({ calls: 2, budgetExceeded: false });
    expect(await store.rolloutTally('trace_none')).toEqual({ calls: 0, budgetExceeded: false });
    await store.beginCall(begin('trace_old', 'c3'));
    expect(await store.rolloutTally('trace_old')).toEqual({ calls: 3, budgetExceeded: false });
  });
});

/** A store booted on a schema with one rollout (trace_old) whose rollouts table lost a column, as one made before it (whose statements schema_parts records with another digest). */
async function storeWithout(column: string): Promise<PostgresStore> {
  const schema = testSchema();
  const first = await openStore(schema);
  await first.beginCall(begin('trace_old', 'c1'));
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(`ALTER TABLE "${schema}".rollouts DROP COLUMN ${column}; UPDATE "${schema}".schema_parts SET digest = 'an older version''s'`);
  await client.end();
  return openStore(schema);
}

describePg('PostgresStore fsync policy', () => {
  it("commits a 'committed' grade with synchronous_commit off for its own transaction only, a durable one as configured", async () => {
    const store = await openStore(testSchema());
    const query = vi.spyOn(pg.Client.prototype, 'query');
    const rollout = { item: {}, budgetLimit: 1, now: 1, door: 'reward' };
    let sent: { text: string; client: pg.Client }[];
    try {
      await store.insertGrade(grade('rw_committed', { score: 1 }), { ...rollout, durability: 'committed' });
      await store.insertGrade(grade('trace_durable', { score: 0 }), rollout);
      sent = query.mock.calls.map((c, i) => ({ text: typeof c[0] === 'string' ? c[0] : (c[0] as { text: string }).text, client: query.mock.contexts[i] as pg.Client }));
    } finally {
      query.mockRestore();
    }
    const grades = sent.filter((q) => q.text.includes('INSERT INTO') && q.text.includes('grades'));
    expect(grades).toHaveLength(2);
    expect(grades[0]!.text).toContain("set_config('synchronous_commit', 'off', true)");
    expect(grades[1]!.text).not.toContain('synchronous_commit');
    // SET LOCAL: the connection it ran on (back in the pool) commits as configured again.
    expect((await grades[0]!.client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit).toBe('on');
    expect((await store.listGrades('rw_committed')).map((g) => g.score)).toEqual([1]);
    expect((await store.listGrades('trace_durable')).map((g) => g.score)).toEqual([0]);
    await store.close();
  });
});

describePg('PostgresStore fsync policy of door sessions', () => {
  it("creates and removes a 'committed' session with synchronous_commit off for its own statement only", async () => {
    const store = await openStore(testSchema());
    const query = vi.spyOn(pg.Client.prototype, 'query');
    const session = { door: 'ors', traceId: 'ors_c', environment: null, tools: [], run: null, state: '{}', createdAt: 1 };
    let sent: string[];
    try {
      await store.createSession({ ...session, id: 'ors_c' }, 'committed');
      await store.createSession({ ...session, id: 'ors_d', traceId: 'ors_d' });
      expect(await store.getSession('ors', 'ors_c')).toMatchObject({ id: 'ors_c', traceId: 'ors_c' });
      expect((await store.deleteSession('ors', 'ors_c', 'committed'))?.id).toBe('ors_c');
      expect((await store.deleteSession('ors', 'ors_d'))?.id).toBe('ors_d');
      sent = query.mock.calls.map((c) => (typeof c[0] === 'string' ? c[0] : (c[0] as { text: string }).text));
    } finally {
      query.mockRestore();
    }
    const writes = sent.filter((t) => /INSERT INTO|DELETE FROM/.test(t) && t.includes('door_sessions'));
    expect(writes.map((t) => t.includes("set_config('synchronous_commit', 'off', true)"))).toEqual([true, false, true, false]);
    expect(await store.getSession('ors', 'ors_c')).toBeUndefined();
    await store.close();
  });
});

describePg('PostgresStore doors', () => {
  it('gives the rollouts of a schema made before the record kept doors the door agent-rft, at boot', async () => {
    const store = await storeWithout('door');
    expect((await store.listRollouts({ limit: 5, filter: { door: 'agent-rft' } })).rollouts.map((r) => r.traceId)).toEqual(['trace_old']);
    await store.openRollout('trace_new', 'nemo-gym', null, 5, 1);
    expect((await store.listRollouts({ limit: 5, filter: { door: 'nemo-gym' } })).rollouts.map((r) => r.traceId)).toEqual(['trace_new']);
  });
});

describePg('PostgresStore run labels', () => {
  it('adds the run label column to a schema made before it, at boot: old rollouts have none, and can get one', async () => {
    const store = await storeWithout('run');
    expect((await store.getRollout('trace_old'))?.run).toBeUndefined();
    await store.labelRollout('trace_old', 'late');
    expect((await store.listRollouts({ limit: 5, filter: { run: 'late' } })).rollouts.map((r) => r.traceId)).toEqual(['trace_old']);
  });
});

describe('PostgresStore configuration', () => {
  it('fails at boot with RFT_ERR_STORE_CONNECT, without the password, when the database refuses the login', async () => {
    const url = databaseUrl.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:wrong-secret@');
    const e = await PostgresStore.open({ url, schema: randomSchema(), instanceId: 'x' }).catch((err: unknown) => err);
    expect(e).toMatchObject({ code: 'RFT_ERR_STORE_CONNECT' });
    expect(String((e as Error).message)).not.toContain('wrong-secret');
  });

  it('fails at boot with RFT_ERR_STORE_CONNECT when nothing listens at the address', async () => {
    const e = await PostgresStore.open({ url: 'postgres://rft:rft@127.0.0.1:1/rft', schema: randomSchema(), instanceId: 'x' }).catch((err: unknown) => err);
    expect(e).toMatchObject({ code: 'RFT_ERR_STORE_CONNECT' });
  });

  it('refuses RFT_STORE=postgres without a postgres:// RFT_DATABASE_URL with RFT_ERR_CONFIG', () => {
    expect(() => loadConfig({ RFT_STORE: 'postgres' })).toThrow(expect.objectContaining({ code: 'RFT_ERR_CONFIG' }));
    expect(() => loadConfig({ RFT_STORE: 'postgres', RFT_DATABASE_URL: 'mysql://x@127.0.0.1/db' })).toThrow(expect.objectContaining({ code: 'RFT_ERR_CONFIG' }));
  });

  it('reads the Postgres settings and a default instance id of hostname:port', () => {
    const c = loadConfig({ RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: 'rft_x', RFT_PG_POOL_SIZE: '7', PORT: '9000' });
    expect(c.store).toEqual({ kind: 'postgres', url: databaseUrl, schema: 'rft_x', poolSize: 7 });
    expect(c.instanceId).toMatch(/:9000$/);
    expect(loadConfig({ RFT_INSTANCE_ID: 'pod-7' }).instanceId).toBe('pod-7');
  });

  it('refuses a schema name that is not a plain lowercase identifier with RFT_ERR_CONFIG', () => {
    expect(() => loadConfig({ RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: 'x"; DROP' })).toThrow(
      expect.objectContaining({ code: 'RFT_ERR_CONFIG' }),
    );
  });
});
