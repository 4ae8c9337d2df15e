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
