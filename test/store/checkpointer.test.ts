// The checkpointer keeps the WAL from growing without bound while writes never stop, holding the
// writer for a short last pass when catching up between commits does not suffice.
import { describe, expect, it, onTestFinished } from 'vitest';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Checkpointer, type CheckpointerOptions } from '../../src/store/checkpointer.js';

function database() {
  const dir = mkdtempSync(join(tmpdir(), 'rft-ckpt-'));
  const path = join(dir, 'db.sqlite');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
  db.transaction(() => {
    for (let i = 0; i < 200; i++) insert.run(i, 'y'.repeat(3000));
  })();
  return { db, path, dir };
}

function start(path: string, dir: string, db: Database.Database, opts: CheckpointerOptions) {
  const ckpt = new Checkpointer(path, opts);
  onTestFinished(async () => {
    await ckpt.stop();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return ckpt;
}

describe('Checkpointer', () => {
  it('holds a writer that never stops for one pass at a time, and the WAL starts over', async () => {
    const { db, path, dir } = database();
    let holds = 0;
    let held = false;
    let longestHoldMs = 0;
    let heldAt = 0;
    start(path, dir, db, {
      catchUpMs: 1,
      longWalFrames: 32,
      passesBeforePause: 1,
      pauseWriter: (paused) => {
        holds++;
        held = true;
        heldAt = performance.now();
        paused();
        return () => {
          held = false;
          longestHoldMs = Math.max(longestHoldMs, performance.now() - heldAt);
        };
      },
    });
    const update = db.prepare('UPDATE t SET v = ? WHERE id = ?');
    let written = 0;
    let maxWal = 0;
    let n = 0;
    const until = Date.now() + 1500;
    while (Date.now() < until) {
      // The writer honours a hold: no commit until the checkpointer lets go.
      while (held) await new Promise((r) => setTimeout(r, 0));
      db.transaction(() => {
        for (let i = 0; i < 4; i++) update.run(`${n++}`.padEnd(3000, 'x'), (n * 7919) % 200);
      })();
      written += 4 * 4096;
      maxWal = Math.max(maxWal, statSync(`${path}-wal`).size);
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(holds).toBeGreaterThan(0);
    expect(held).toBe(false);
    expect(longestHoldMs).toBeLessThan(1000);
    expect(maxWal).toBeLessThan(written / 2);
  });

  it('copies everything back with its periodic passes when the writer cannot be held', async () => {
    const { db, path, dir } = database();
    start(path, dir, db, { intervalMs: 20 });
    db.prepare('UPDATE t SET v = ? WHERE id = 1').run('x');
    await new Promise((r) => setTimeout(r, 200));
    const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
    expect(r?.log).toBeGreaterThan(0);
    expect(r?.checkpointed).toBe(r?.log);
  });
});
