import { describe, expect, it, onTestFinished } from 'vitest';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SqliteStore } from '../../src/store/sqlite.js';
import { begin, grade, storeContract } from './contract.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const storeModule = new URL('../../src/store/sqlite.ts', import.meta.url).href;

/** A database path in a fresh directory, removed when the test ends. */
function scratchPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-store-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'db.sqlite');
}

/** A store on a fresh database, closed when the test ends. */
function open(sync: 'full' | 'normal' = 'full') {
  const path = scratchPath();
  const store = new SqliteStore({ path, sync });
  onTestFinished(() => store.close());
  return { store, path };
}

storeContract('SqliteStore', async () => open().store);
storeContract('SqliteStore (sync normal)', async () => open('normal').store);

describe('SqliteStore group commit', () => {
  it('has every write of a batch on disk, visible to another connection, once its promise resolves', async () => {
    const { store, path } = open();
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.beginCall(begin(`trace_${i % 3}`, `c${i}`, { budgetLimit: 100 }))));
    const other = new Database(path, { readonly: true });
    expect(other.prepare('SELECT count(*) AS n FROM calls').get()).toEqual({ n: 20 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.finishCall(`trace_${i % 3}`, `c${i}`, done)));
    expect(other.prepare(`SELECT count(*) AS n FROM calls WHERE status = 'ok'`).get()).toEqual({ n: 20 });
    other.close();
  });

  it('commits many turns of writes in order, each reply after its own commit', async () => {
    const { store, path } = open();
    const other = new Database(path, { readonly: true });
    const seen: number[] = [];
    for (let turn = 0; turn < 5; turn++) {
      await Promise.all(Array.from({ length: 30 }, (_, i) => store.beginCall(begin(`trace_t${i}`, `c${turn}`, { budgetLimit: 100 }))));
      seen.push((other.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n);
    }
    expect(seen).toEqual([30, 60, 90, 120, 150]);
    other.close();
  });
});

describe('SqliteStore ledger', () => {
  it('keeps a rollout exactly across a restart: budget, next seq, and its call ids (retries and conflicts)', async () => {
    const path = scratchPath();
    const first = new SqliteStore({ path });
    await first.beginCall(begin('trace_old', 'c1', { budgetLimit: 3, argsHash: 'h1' }));
    await first.beginCall(begin('trace_old', 'c2', { budgetLimit: 3, argsHash: 'h2' }));
    await first.close();
    const store = new SqliteStore({ path });
    onTestFinished(() => store.close());
    expect(await store.beginCall(begin('trace_old', 'c1', { argsHash: 'h1' }))).toMatchObject({ kind: 'existing', call: { seq: 1 } });
    expect(await store.beginCall(begin('trace_old', 'c2', { argsHash: 'other' }))).toMatchObject({ kind: 'conflict' });
    expect(await store.beginCall(begin('trace_old', 'c3'))).toMatchObject({ kind: 'started', call: { seq: 3 }, budget: { used: 3, limit: 3 } });
    expect(await store.beginCall(begin('trace_old', 'c4'))).toMatchObject({ kind: 'over_budget', call: { seq: 4 } });
    expect(await store.getBudget('trace_old', 0)).toEqual({ used: 3, limit: 3, exceeded: true });
  });

  it('refuses a start the database rejects half-way, keeps the batch around it, and leaves nothing half-written', async () => {
    const { store, path } = open();
    await store.beginCall(begin('trace_w', 'c1'));
    // The budget charge of the rollout's second call fails (after its call row was inserted).
    const other = new Database(path);
    other.exec(`CREATE TRIGGER refuse BEFORE UPDATE ON rollouts WHEN NEW.next_seq = 3 BEGIN SELECT RAISE(ABORT, 'refused'); END`);
    const [mine, neighbour] = await Promise.allSettled([store.beginCall(begin('trace_w', 'c2')), store.beginCall(begin('trace_n', 'c1'))]);
    expect(mine).toMatchObject({ status: 'rejected', reason: { code: 'SQLITE_CONSTRAINT_TRIGGER' } });
    expect(neighbour).toMatchObject({ status: 'fulfilled', value: { kind: 'started' } });
    // The refused start charged nothing and left no call row: its retry is a new call.
    expect(await store.getBudget('trace_w', 0)).toMatchObject({ used: 1 });
    expect(await store.getCall('trace_w', 'c2')).toBeUndefined();
    other.exec('DROP TRIGGER refuse');
    other.close();
    expect(await store.beginCall(begin('trace_w', 'c2'))).toMatchObject({ kind: 'started', call: { seq: 2 }, budget: { used: 2 } });
  });
});

const done = { output: 'ok', status: 'ok' as const, finishedAt: 2, durationMs: 1, outputBytes: 2, truncated: false };

describe('SqliteStore, finishing calls', () => {
  it('refuses to finish a call it has no running record of', async () => {
    const { store } = open();
    await expect(store.finishCall('trace_ro', 'never', done)).rejects.toThrow(/not recorded as running/);
  });
});

describe('SqliteStore, grades', () => {
  it('records a grade and its rollout together or not at all', async () => {
    const { store, path } = open();
    const other = new Database(path);
    other.exec(`CREATE TRIGGER refuse BEFORE INSERT ON grades BEGIN SELECT RAISE(ABORT, 'refused'); END`);
    await expect(store.insertGrade(grade('trace_g'), { item: { q: 1 }, budgetLimit: 5, now: 1 })).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_TRIGGER' });
    expect(await store.getRollout('trace_g')).toBeUndefined();
    other.exec('DROP TRIGGER refuse');
    other.close();
    await store.insertGrade(grade('trace_g'), { item: { q: 1 }, budgetLimit: 5, now: 1 });
    expect(await store.getRollout('trace_g')).toMatchObject({ item: { q: 1 }, lastScore: 0.75 });
  });
});

describe('SqliteStore, dataset rows apart from the ledger row', () => {
  it('keeps a new rollout item in rollout_items, so the per-call budget update does not rewrite it', async () => {
    const { store, path } = open();
    const item = { messages: [{ role: 'user', content: 'q'.repeat(20_000) }] };
    await store.beginCall(begin('trace_big', 'c1', { item }));
    await store.beginCall(begin('trace_big', 'c2', { item }));
    const other = new Database(path, { readonly: true });
    expect(other.prepare('SELECT item FROM rollouts WHERE trace_id = ?').get('trace_big')).toEqual({ item: null });
    expect(JSON.parse((other.prepare('SELECT item FROM rollout_items WHERE trace_id = ?').get('trace_big') as { item: string }).item)).toEqual(item);
    other.close();
    expect((await store.getRollout('trace_big'))?.item).toEqual(item);
    expect((await store.listRollouts({ limit: 10 })).rollouts[0]).toMatchObject({ traceId: 'trace_big', budgetUsed: 2, calls: 2 });
  });

  it('reads and keeps items of a database made before rollout_items (in rollouts.item)', async () => {
    const path = scratchPath();
    const first = new SqliteStore({ path });
    await first.close();
    // What an older version wrote: the item in the rollouts row, no rollout_items entry.
    const legacy = new Database(path);
    legacy.prepare(`INSERT INTO rollouts (trace_id, created_at, updated_at, item, budget_limit) VALUES ('trace_old', 1, 1, ?, 5)`).run('{"q":"old row"}');
    legacy.prepare(`INSERT INTO rollouts (trace_id, created_at, updated_at, item, budget_limit) VALUES ('trace_empty', 1, 1, '{}', 5)`).run();
    legacy.close();
    const store = new SqliteStore({ path });
    onTestFinished(() => store.close());
    expect((await store.getRollout('trace_old'))?.item).toEqual({ q: 'old row' });
    // A grade's row does not replace a non-empty one, wherever it is kept; it fills an empty one.
    await store.ensureRollout('trace_old', { q: 'other' }, 5, 2);
    await store.ensureRollout('trace_empty', { q: 'filled' }, 5, 2);
    expect((await store.getRollout('trace_old'))?.item).toEqual({ q: 'old row' });
    expect((await store.getRollout('trace_empty'))?.item).toEqual({ q: 'filled' });
    expect(await store.beginCall(begin('trace_old', 'c1'))).toMatchObject({ kind: 'started', call: { seq: 1 } });
  });

  it('counts the recorded calls of a database made before rollouts kept their count, once, at open', async () => {
    const path = scratchPath();
    const first = new SqliteStore({ path });
    const b = await first.beginCall(begin('trace_old', 'ours'));
    await first.unbeginCall('trace_old', 'ours', b.call.seq, 1);
    for (const id of ['c1', 'c2']) await first.beginCall(begin('trace_old', id));
    await first.ensureRollout('trace_none', null, 5, 1);
    await first.close();
    // What an older version's file looks like: no call_count column (next_seq says 4, 2 calls recorded).
    const legacy = new Database(path);
    legacy.exec('ALTER TABLE rollouts DROP COLUMN call_count');
    legacy.close();
    const store = new SqliteStore({ path });
    onTestFinished(() => store.close());
    expect(await store.rolloutTally('trace_old')).toEqual({ calls: 2, budgetExceeded: false });
    expect(await store.rolloutTally('trace_none')).toEqual({ calls: 0, budgetExceeded: false });
    await store.beginCall(begin('trace_old', 'c3'));
    expect(await store.rolloutTally('trace_old')).toEqual({ calls: 3, budgetExceeded: false });
  });
});

/** A store opened on a database with one rollout (trace_old) whose rollouts table lost a column, as one made before it. */
async function storeWithout(column: string): Promise<SqliteStore> {
  const path = scratchPath();
  const first = new SqliteStore({ path });
  await first.beginCall(begin('trace_old', 'c1'));
  await first.close();
  const legacy = new Database(path);
  legacy.exec(`ALTER TABLE rollouts DROP COLUMN ${column}`);
  legacy.close();
  const store = new SqliteStore({ path });
  onTestFinished(() => store.close());
  return store;
}

it('gives the rollouts of a database made before the record kept doors the door agent-rft, at open', async () => {
  const store = await storeWithout('door');
  expect((await store.listRollouts({ limit: 5, filter: { door: 'agent-rft' } })).rollouts.map((r) => r.traceId)).toEqual(['trace_old']);
  await store.openRollout('trace_new', 'nemo-gym', null, 5, 1);
  expect((await store.listRollouts({ limit: 5, filter: { door: 'nemo-gym' } })).rollouts.map((r) => r.traceId)).toEqual(['trace_new']);
});

it('adds the run label column to a database made before it, at open: old rollouts have none, and can get one', async () => {
  const store = await storeWithout('run');
  expect((await store.getRollout('trace_old'))?.run).toBeUndefined();
  await store.labelRollout('trace_old', 'late');
  expect((await store.listRollouts({ limit: 5, filter: { run: 'late' } })).rollouts.map((r) => r.traceId)).toEqual(['trace_old']);
});

describe('SqliteStore, one writer process', () => {
  it('refuses a second store on the same file with a coded error, and allows one after the first closes', async () => {
    const path = scratchPath();
    const first = new SqliteStore({ path });
    let code: string | undefined;
    try {
      new SqliteStore({ path });
    } catch (e) {
      code = (e as { code?: string }).code;
    }
    expect(code).toBe('RFT_ERR_STORE_IN_USE');
    // Another process too (the lock is the operating system's, not this process's).
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', '-e', `import('${storeModule}').then(({ SqliteStore }) => new SqliteStore({ path: ${JSON.stringify(path)} })).catch((e) => { console.log(e.code); process.exit(3); })`],
      { encoding: 'utf8', cwd: repoRoot },
    );
    expect({ status: child.status, out: child.stdout.trim() }).toEqual({ status: 3, out: 'RFT_ERR_STORE_IN_USE' });
    await first.beginCall(begin('trace_lock', 'c1'));
    await first.close();
    const second = new SqliteStore({ path });
    onTestFinished(() => second.close());
    expect(await second.getCall('trace_lock', 'c1')).toMatchObject({ status: 'running' });
  });
});


describe('SqliteStore, the WAL under sustained writes', () => {
  it('stays bounded while writes never stop: SQLite checkpoints it and starts it over', async () => {
    const { store, path } = open('normal');
    const output = 'x'.repeat(50_000);
    let largest = 0;
    // 40 MB of results in turns of 20 calls, with no pause between turns.
    for (let turn = 0; turn < 40; turn++) {
      const ids = Array.from({ length: 20 }, (_, i) => [`trace_${turn}`, `c${i}`] as const);
      await Promise.all(ids.map(([t, c]) => store.beginCall(begin(t, c, { budgetLimit: 100 }))));
      await Promise.all(ids.map(([t, c]) => store.finishCall(t, c, { ...done, output })));
      largest = Math.max(largest, statSync(`${path}-wal`).size);
    }
    expect(largest).toBeLessThan(12 * 1024 * 1024);
  });
});
