import { describe, expect, it, onTestFinished } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { WalSyncer } from '../../src/store/wal-syncer.js';

/** A file standing for the WAL in a fresh directory (removed when the test ends). */
function walFile(create = true): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-syncer-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'db.sqlite-wal');
  if (create) writeFileSync(path, 'frames');
  return path;
}

function syncer(path: string) {
  const s = new WalSyncer<number>(path);
  onTestFinished(() => s.close());
  const answered: { items: number[]; error: string | null }[] = [];
  s.onCovered = (items, e) => answered.push({ items, error: e ? e.message : null });
  return { s, answered };
}

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 2));
  }
};

describe('WalSyncer', () => {
  it('answers every commit, in commit order, once an fdatasync begun after it has ended', async () => {
    const { s, answered } = syncer(walFile());
    for (let i = 1; i <= 200; i++) {
      s.push(i);
      if (i % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    await until(() => answered.flatMap((a) => a.items).length === 200);
    expect(answered.flatMap((a) => a.items)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(answered.every((a) => a.error === null)).toBe(true);
    // Grouped: commits counted while an fdatasync ran share the next one.
    expect(answered.length).toBeLessThan(200);
  });

  it('answers with the error when the WAL cannot be synced, and keeps answering later commits', async () => {
    const { s, answered } = syncer(walFile(false));
    s.push(1);
    await until(() => answered.length === 1);
    expect(answered[0]).toEqual({ items: [1], error: expect.stringMatching(/ENOENT/) });
    s.push(2);
    await until(() => answered.length === 2);
    expect(answered[1]!.items).toEqual([2]);
  });

  it('if its thread dies, syncs what was waiting and everything after on the thread pool', async () => {
    const { s, answered } = syncer(walFile());
    const worker = (s as unknown as { worker: Worker }).worker;
    await worker.terminate();
    s.push(1);
    s.push(2);
    await until(() => answered.flatMap((a) => a.items).length === 2);
    expect(answered.flatMap((a) => a.items).sort()).toEqual([1, 2]);
    expect(answered.every((a) => a.error === null)).toBe(true);
  });

  it('close waits for every commit pushed before it to be answered', async () => {
    const { s, answered } = syncer(walFile());
    for (let i = 1; i <= 10; i++) s.push(i);
    await s.close();
    expect(answered.flatMap((a) => a.items)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
  });
});
