import { describe, expect, it, onTestFinished } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite.js';
import { begin, storeContract } from './contract.js';

/** A store in a fresh directory; closed, then its directory removed, when the test ends. */
function open() {
  const dir = mkdtempSync(join(tmpdir(), 'rft-store-'));
  const path = join(dir, 'db.sqlite');
  const store = new SqliteStore({ path });
  onTestFinished(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, path };
}

storeContract('SqliteStore', async () => open().store);

describe('SqliteStore group commit', () => {
  it('has every write of a batch on disk, visible to another connection, once its promise resolves', async () => {
    const { store, path } = open();
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.beginCall(begin(`trace_${i % 3}`, `c${i}`))));
    const other = new Database(path, { readonly: true });
    expect(other.prepare('SELECT count(*) AS n FROM calls').get()).toEqual({ n: 20 });
    other.close();
  });
});

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
