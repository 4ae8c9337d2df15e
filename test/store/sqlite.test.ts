import { describe, expect, it, onTestFinished } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SqliteStore } from '../../src/store/sqlite.js';
import { SqliteWriter, type WriterMode } from '../../src/store/sqlite-writer.js';
import { begin, storeContract } from './contract.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const storeModule = new URL('../../src/store/sqlite.ts', import.meta.url).href;

/** A database path in a fresh directory, removed when the test ends. */
function scratchPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-store-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'db.sqlite');
}

/** A store on a fresh database, closed when the test ends. */
function open(writer: WriterMode = 'inline', sync: 'full' | 'normal' = 'full') {
  const path = scratchPath();
  const store = new SqliteStore({ path, writer, sync });
  onTestFinished(() => store.close());
  return { store, path };
}

storeContract('SqliteStore (inline writer)', async () => open('inline').store);
storeContract('SqliteStore (writer thread)', async () => open('thread').store);
storeContract('SqliteStore (inline writer, sync normal)', async () => open('inline', 'normal').store);

describe.each(['inline', 'thread'] as const)('SqliteStore group commit (%s writer)', (writer) => {
  it('has every write of a batch on disk, visible to another connection, once its promise resolves', async () => {
    const { store, path } = open(writer);
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.beginCall(begin(`trace_${i % 3}`, `c${i}`, { budgetLimit: 100 }))));
    const other = new Database(path, { readonly: true });
    expect(other.prepare('SELECT count(*) AS n FROM calls').get()).toEqual({ n: 20 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.finishCall(`trace_${i % 3}`, `c${i}`, done)));
    expect(other.prepare(`SELECT count(*) AS n FROM calls WHERE status = 'ok'`).get()).toEqual({ n: 20 });
    other.close();
  });

  it('commits many turns of writes in order, each reply after its own commit', async () => {
    const { store, path } = open(writer);
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

describe('SqliteStore in-memory ledger', () => {
  it('reloads an evicted rollout exactly: budget, next seq, and its call ids (retries and conflicts)', async () => {
    const store = new SqliteStore({ path: scratchPath(), ledgerCacheSize: 2 });
    onTestFinished(() => store.close());
    await store.beginCall(begin('trace_old', 'c1', { budgetLimit: 3, argsHash: 'h1' }));
    await store.beginCall(begin('trace_old', 'c2', { budgetLimit: 3, argsHash: 'h2' }));
    // Three other rollouts push trace_old out of a cache of two.
    for (const t of ['trace_p', 'trace_q', 'trace_r']) await store.beginCall(begin(t, 'c1'));
    expect(await store.beginCall(begin('trace_old', 'c1', { argsHash: 'h1' }))).toMatchObject({ kind: 'existing', call: { seq: 1 } });
    expect(await store.beginCall(begin('trace_old', 'c2', { argsHash: 'other' }))).toMatchObject({ kind: 'conflict' });
    expect(await store.beginCall(begin('trace_old', 'c3'))).toMatchObject({ kind: 'started', call: { seq: 3 }, budget: { used: 3, limit: 3 } });
    expect(await store.beginCall(begin('trace_old', 'c4'))).toMatchObject({ kind: 'over_budget', call: { seq: 4 } });
    expect(await store.getBudget('trace_old', 0)).toEqual({ used: 3, limit: 3, exceeded: true });
  });

  it('refuses a start the database rejects, keeps the batch around it, and then decides from the database', async () => {
    const { store, path } = open();
    await store.beginCall(begin('trace_w', 'c1'));
    // Another writer (which this store does not expect) records c2 behind its back.
    const other = new Database(path);
    other
      .prepare(
        `INSERT INTO calls (trace_id, call_id, seq, tool, arguments, args_hash, output, status, cost, started_at)
         VALUES ('trace_w', 'c2', 2, 't', '{}', 'h', 'theirs', 'ok', 1, 1)`,
      )
      .run();
    other.close();
    const [mine, neighbour] = await Promise.allSettled([store.beginCall(begin('trace_w', 'c2')), store.beginCall(begin('trace_n', 'c1'))]);
    expect(mine.status).toBe('rejected');
    expect(neighbour).toMatchObject({ status: 'fulfilled', value: { kind: 'started' } });
    // Nothing half-written: the refused start charged nothing; the ledger is reloaded and sees c2.
    expect(await store.getBudget('trace_w', 0)).toMatchObject({ used: 1 });
    expect(await store.beginCall(begin('trace_w', 'c2'))).toMatchObject({ kind: 'existing', call: { output: 'theirs' } });
    expect(await store.beginCall(begin('trace_w', 'c3'))).toMatchObject({ kind: 'started', budget: { used: 2 } });
  });
});

const done = { output: 'ok', status: 'ok' as const, finishedAt: 2, durationMs: 1, outputBytes: 2, truncated: false };

describe('SqliteStore, starts of read-only calls (durable: false)', () => {
  it('answers a non-durable start before its commit, and its finish only once both are on disk', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-store-ro-'));
    try {
      const path = join(dir, 'db.sqlite');
      const store = new SqliteStore({ path });
      const other = new Database(path, { readonly: true });
      const count = () => (other.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n;
      const started = await store.beginCall({ ...roBegin, durable: false });
      expect(started.kind).toBe('started');
      expect(count()).toBe(0);
      await store.finishCall('trace_ro', 'c1', { output: 'ok', status: 'ok', finishedAt: 2, durationMs: 1, outputBytes: 2, truncated: false });
      expect(other.prepare('SELECT status, output FROM calls').get()).toEqual({ status: 'ok', output: 'ok' });
      other.close();
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to finish a call it has no running record of', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-store-ro-'));
    try {
      const store = new SqliteStore({ path: join(dir, 'db.sqlite') });
      await expect(
        store.finishCall('trace_ro', 'never', { output: 'ok', status: 'ok', finishedAt: 2, durationMs: 1, outputBytes: 2, truncated: false }),
      ).rejects.toThrow(/not recorded as running/);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const roBegin = {
  traceId: 'trace_ro', callId: 'c1', tool: 't', arguments: '{}', argsHash: 'h', cost: 1, budgetLimit: 5, item: null, credential: null, now: 1, overBudgetOutput: 'spent',
};

/** A writer of one statement (INSERT INTO t) on a fresh database; count() reads t's rows. */
function tableWriter(mode: WriterMode, fullSync = true) {
  const path = scratchPath();
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v INTEGER)');
  const writer = new SqliteWriter(path, [{ sql: 'INSERT INTO t (v) VALUES (?)' }], fullSync, mode, db);
  onTestFinished(async () => {
    await writer.close();
    db.close();
  });
  return { writer, count: () => (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n };
}

describe.each(['inline', 'thread'] as const)('SqliteWriter holds (%s)', (mode) => {
  it('commits nothing while held, answers once released, and reports held only when idle', async () => {
    const { writer, count } = tableWriter(mode);
    await writer.submit([[0, [1]]]);
    // A unit sent and not yet answered: held only once it is.
    const inFlight = writer.submit([[0, [2]]]);
    await new Promise((r) => setImmediate(r));
    let heldAt = -1;
    const release = writer.pause(() => (heldAt = count()));
    await inFlight;
    expect(heldAt).toBe(2);
    let answered = false;
    const later = writer.submit([[0, [3]]]).then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(answered).toBe(false);
    expect(count()).toBe(2);
    release();
    await later;
    expect(count()).toBe(3);
    await writer.settled();
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
});

describe('SqliteWriter thread failure', () => {
  it('refuses every later write with a clear error once its thread is gone (nothing is half-acknowledged)', async () => {
    const { writer, count } = tableWriter('thread');
    await writer.submit([[0, [1]]]);
    await (writer as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await expect(writer.submit([[0, [2]]])).rejects.toThrow(/SQLite writer thread exited/);
    expect(count()).toBe(1);
  });
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

describe('SqliteWriter, inline', () => {
  it('commits what an answer leads to (a fast tool result) in the same turn of the event loop', async () => {
    const { writer, count } = tableWriter('inline', false);
    const order: string[] = [];
    const second = new Promise<void>((resolve) => {
      void writer.submit([[0, [1]]]).then(() => {
        void writer.submit([[0, [2]]]).then(() => {
          order.push('second committed');
          resolve();
        });
      });
    });
    // Queued after the writer's flushes of this turn: runs before anything of the next turn.
    setImmediate(() => order.push('end of the turn'));
    await second;
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['second committed', 'end of the turn']);
    expect(count()).toBe(2);
  });
});

describe('SqliteStore with a dead writer thread', () => {
  it('answers every call with an error instead of waiting forever', async () => {
    const { store } = open('thread');
    await store.beginCall(begin('trace_dead', 'c1'));
    const writer = (store as unknown as { writer: { worker: { terminate(): Promise<number> } } }).writer;
    await writer.worker.terminate();
    const soon = <T>(p: Promise<T>) => Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error('hung')), 2000))]);
    for (const call of [begin('trace_dead', 'c2'), begin('trace_new', 'c1'), begin('trace_new', 'c2')]) {
      await expect(soon(store.beginCall(call))).rejects.toThrow(/writer thread exited/);
    }
    // A refused write of a rollout the ledger has not loaded must not leave it waiting for that write.
    await expect(soon(store.ensureRollout('trace_graded', { q: 1 }, 5, 1))).rejects.toThrow(/writer thread exited/);
    await expect(soon(store.beginCall(begin('trace_graded', 'c1')))).rejects.toThrow(/writer thread exited/);
    await expect(soon(store.finishCall('trace_dead', 'c1', done))).rejects.toThrow(/writer thread exited/);
    await expect(soon(store.ping())).rejects.toThrow(/writer thread exited/);
  });
});
