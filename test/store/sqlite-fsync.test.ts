// The SQLite store's group fsync: nothing is answered before the fdatasync of the WAL that holds it
// has ended (a read of committed but unsynced rows included), and a failing fsync (an I/O error on
// the WAL) means what it covered may not be on disk, so its writes and every later one are refused.
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMMITTED_SYNC_DELAY_MS, SqliteStore } from '../../src/store/sqlite.js';
import { begin, grade } from './contract.js';

const disk = vi.hoisted(() => ({ failing: false, held: false, waiting: [] as (() => void)[], syncs: 0 }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const fdatasync = (fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
    disk.syncs++;
    if (disk.failing) setImmediate(() => cb(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })));
    else if (disk.held) disk.waiting.push(() => fs.fdatasync(fd, cb));
    else fs.fdatasync(fd, cb);
  };
  return { ...fs, default: { ...fs, fdatasync }, fdatasync };
});

function freshStore(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), 'rft-fsync-'));
  const store = new SqliteStore({ path: join(dir, 'db.sqlite') });
  onTestFinished(async () => {
    disk.held = false;
    disk.waiting.splice(0).forEach((go) => go());
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

const settled = (p: Promise<unknown>) => {
  const s = { done: false };
  void p.then(() => (s.done = true), () => (s.done = true));
  return s;
};

describe('SqliteStore, the group fsync', () => {
  it('answers a read of a committed, unsynced row only once the fsync holding it has ended', async () => {
    const store = freshStore();
    await store.beginCall(begin('trace_r', 'c0'));
    disk.held = true;
    const write = settled(store.beginCall(begin('trace_r', 'c1')));
    await vi.waitFor(() => expect(disk.waiting).toHaveLength(1), { timeout: 10_000 }); // c1 committed, its fsync not begun
    const readP = store.getCall('trace_r', 'c1');
    const read = settled(readP);
    await new Promise((r) => setTimeout(r, 20));
    expect(write.done).toBe(false);
    expect(read.done).toBe(false);
    disk.held = false;
    disk.waiting.splice(0).forEach((go) => go());
    expect(await readP).toMatchObject({ callId: 'c1', status: 'running' });
    await vi.waitFor(() => expect(write.done).toBe(true), { timeout: 10_000 });
    // Nothing pending: a read is answered at once.
    expect(await store.getCall('trace_r', 'c0')).toMatchObject({ callId: 'c0' });
  });

  it("answers a 'committed' grade once committed while the fsync is held, a durable write and a read of it only after", async () => {
    const store = freshStore();
    const rollout = { item: {}, budgetLimit: 10, now: 1, door: 'reward' };
    disk.held = true;
    // Alone: answered at its commit; its fsync is begun all the same, COMMITTED_SYNC_DELAY_MS later (not waited for).
    const first = await store.insertGrade(grade('rw_1', { score: 1 }), { ...rollout, durability: 'committed' });
    expect(first.record).toMatchObject({ traceId: 'rw_1', score: 1 });
    await vi.waitFor(() => expect(disk.waiting).toHaveLength(1), { timeout: 10_000 });
    // Unsynced 'committed' writes alone do not hold a read.
    expect(await store.listGrades('rw_1')).toHaveLength(1);
    // A tool call's start (its retry key and budget depend on it) and a durable grade wait for their fsync.
    const call = settled(store.beginCall(begin('trace_c', 'c1')));
    const durable = settled(store.insertGrade(grade('trace_g', { score: 1 }), rollout));
    // In the same turn as the durable writes, a 'committed' grade is answered at once.
    await store.insertGrade(grade('rw_2', { score: 0 }), { ...rollout, durability: 'committed' });
    // Now a read waits: what it sees includes durable writes not yet on disk.
    const read = settled(store.getCall('trace_c', 'c1'));
    await new Promise((r) => setTimeout(r, 20));
    expect([call.done, durable.done, read.done]).toEqual([false, false, false]);
    disk.held = false;
    disk.waiting.splice(0).forEach((go) => go());
    await vi.waitFor(() => expect([call.done, durable.done, read.done]).toEqual([true, true, true]), { timeout: 10_000 });
  });

  it("a turn of 'committed' writes only rides on the next durable turn's fsync within COMMITTED_SYNC_DELAY_MS, else gets its own that late", async () => {
    // One session at a time (issue 41): ORS's /create_session (committed) then /create (durable) was two
    // fdatasyncs, the first begun at once and the second queued behind it.
    const store = freshStore();
    const session = { door: 'ors', traceId: 'ors_1', environment: null, tools: [], run: null, state: '{}', createdAt: 1 };
    await store.beginCall(begin('trace_s', 'c0'));
    const before = disk.syncs;
    await store.createSession({ ...session, id: 'ors_1' }, 'committed');
    expect(disk.syncs).toBe(before); // answered at its commit, no fdatasync begun yet
    await store.beginCall(begin('trace_s', 'c1')); // durable: its fdatasync covers both
    expect(disk.syncs).toBe(before + 1);
    await new Promise((r) => setTimeout(r, COMMITTED_SYNC_DELAY_MS * 3));
    expect(disk.syncs).toBe(before + 1); // the late one found nothing left
    // Alone, it is fsynced COMMITTED_SYNC_DELAY_MS later all the same, and a burst shares that one.
    await store.deleteSession('ors', 'ors_1', 'committed');
    await store.createSession({ ...session, id: 'ors_2' }, 'committed');
    expect(disk.syncs).toBe(before + 1);
    await vi.waitFor(() => expect(disk.syncs).toBe(before + 2), { timeout: 10_000 });
    await new Promise((r) => setTimeout(r, COMMITTED_SYNC_DELAY_MS * 3));
    expect(disk.syncs).toBe(before + 2);
    expect(await store.getSession('ors', 'ors_1')).toBeUndefined();
    expect(await store.getSession('ors', 'ors_2')).toMatchObject({ id: 'ors_2' });
  });

  it('answers a read that saw only writes an fsync under way covers with that fsync, not a second one', async () => {
    // One session at a time (issue 41): a reply's last write (NeMo Gym's "delivered" mark) is being fsynced
    // when the client's next request reads the session; that read waited for a second fsync of its own.
    const store = freshStore();
    await store.beginCall(begin('trace_w', 'c0'));
    disk.held = true;
    const write = settled(store.beginCall(begin('trace_w', 'c1')));
    await vi.waitFor(() => expect(disk.waiting).toHaveLength(1), { timeout: 10_000 }); // c1's fsync under way (held)
    const readP = store.getCall('trace_w', 'c1');
    const read = settled(readP);
    await new Promise((r) => setTimeout(r, 20));
    expect([write.done, read.done]).toEqual([false, false]);
    // That fsync ends: both are answered by it, and no other is begun (the disk stays held: a second would wait).
    disk.waiting.splice(0).forEach((go) => go());
    await vi.waitFor(() => expect([write.done, read.done]).toEqual([true, true]), { timeout: 10_000 });
    expect(await readP).toMatchObject({ callId: 'c1', status: 'running' });
    expect(disk.waiting).toHaveLength(0);
  });

  it('holds a read that saw a durable write committed after the fsync under way began until the next fsync', async () => {
    const store = freshStore();
    disk.held = true;
    const first = settled(store.beginCall(begin('trace_n', 'c1')));
    await vi.waitFor(() => expect(disk.waiting).toHaveLength(1), { timeout: 10_000 }); // c1's fsync under way
    const second = settled(store.beginCall(begin('trace_n', 'c2'))); // committed after it began
    await new Promise((r) => setTimeout(r, 20)); // (its turn committed: the read below runs at once)
    const read = settled(store.getCall('trace_n', 'c2'));
    await new Promise((r) => setTimeout(r, 20));
    disk.waiting.splice(0).forEach((go) => go()); // the first fsync ends; the next one begins, held
    await vi.waitFor(() => expect(first.done).toBe(true), { timeout: 10_000 });
    await vi.waitFor(() => expect(disk.waiting).toHaveLength(1), { timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 20));
    expect([second.done, read.done]).toEqual([false, false]);
    disk.waiting.splice(0).forEach((go) => go());
    await vi.waitFor(() => expect([second.done, read.done]).toEqual([true, true]), { timeout: 10_000 });
  });

  it('refuses the writes a failed fsync covered, every later one, and reads', async () => {
    const store = freshStore();
    expect(await store.beginCall(begin('trace_ok', 'c1'))).toMatchObject({ kind: 'started' });
    disk.failing = true;
    await expect(store.beginCall(begin('trace_ok', 'c2'))).rejects.toMatchObject({ code: 'EIO' });
    disk.failing = false;
    await expect(store.beginCall(begin('trace_ok', 'c3'))).rejects.toMatchObject({ code: 'EIO' });
    await expect(store.ping()).rejects.toMatchObject({ code: 'EIO' });
    await expect(store.getCall('trace_ok', 'c1')).rejects.toMatchObject({ code: 'EIO' });
  });
});
