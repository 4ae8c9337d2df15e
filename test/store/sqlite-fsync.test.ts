// The SQLite store's group fsync failing (an I/O error on the WAL): what it wrote may not be on disk,
// so the turn's writes and every later one are refused, never acknowledged.
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite.js';
import { begin } from './contract.js';

const failing = vi.hoisted(() => ({ on: false }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const fdatasync = (fd: number, cb: (e: NodeJS.ErrnoException | null) => void) =>
    failing.on ? setImmediate(() => cb(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))) : fs.fdatasync(fd, cb);
  return { ...fs, default: { ...fs, fdatasync }, fdatasync };
});

describe('SqliteStore, a failed fsync', () => {
  it('refuses the writes it covered and every later one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-fsync-'));
    const store = new SqliteStore({ path: join(dir, 'db.sqlite') });
    onTestFinished(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    expect(await store.beginCall(begin('trace_ok', 'c1'))).toMatchObject({ kind: 'started' });
    failing.on = true;
    await expect(store.beginCall(begin('trace_ok', 'c2'))).rejects.toMatchObject({ code: 'EIO' });
    failing.on = false;
    await expect(store.beginCall(begin('trace_ok', 'c3'))).rejects.toMatchObject({ code: 'EIO' });
    await expect(store.ping()).rejects.toMatchObject({ code: 'EIO' });
  });
});
