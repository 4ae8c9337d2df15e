// The SQLite store's writer: it collects a turn's writes, commits them as one transaction, fsyncs
// the WAL (sync 'full': inline, in the syncer thread of wal-syncer.ts; in the writer thread, on
// libuv's pool) and then answers. The same engine runs either inline,
// at the end of the event-loop turn on the store's own connection (default), or in a worker thread
// with its own connection, the event loop then only posting one JSON message per batch.
//
// A unit is the writes that must land together (a call's insert and its budget charge): a list of
// ops [statement index, positional params]. A unit answers [changes, lastInsertRowid] of its first
// op, or an error message. Units run without savepoints; if one fails, the batch is rolled back and
// run again with a savepoint per unit, so the failing unit alone is refused and the others land.
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { stopWorker } from './stop-worker.js';
import { WalSyncer } from './wal-syncer.js';

/** [statement index, positional parameters]. */
export type Op = [number, unknown[]];
export type Unit = Op[];
export type UnitResult = [changes: number, lastInsertRowid: number];
/** A batch answered: its id, and each unit's result or error message. */
type Ack = [number, (UnitResult | string)[]];

/** What a `require` statement that finds no row throws (after a write that changed nothing). */
export const REQUIRE_FAILED = 'RFT_REQUIRE_FAILED';

export interface WriterStatement {
  sql: string;
  /**
   * A SELECT guarding the op before it: when that op changed no row, this must find one, or the
   * unit fails with REQUIRE_FAILED (e.g. "finish a call that is not recorded").
   */
  require?: boolean;
}

// The engine: plain JavaScript in a string, so it runs both in the worker (which then needs no
// TypeScript loader such as tsx or vitest to start) and, compiled once with new Function, on the
// event loop itself ('inline'). It commits batches and answers them through `answer(acks)`.
// With opts.syncer (inline) the fsyncs are that thread's; else each is an fs.fdatasync on libuv's pool.
const ENGINE_SOURCE = `
function createEngine(db, fs, statements, opts, answer) {
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  db.pragma('cache_size = -65536');
  db.pragma('journal_size_limit = 67108864');
  db.pragma('wal_autocheckpoint = 0');
  const stmts = statements.map((s) => db.prepare(s.sql));
  const requires = statements.map((s) => s.require === true);
  const BEGIN = db.prepare('BEGIN IMMEDIATE'), COMMIT = db.prepare('COMMIT'), ROLLBACK = db.prepare('ROLLBACK');
  const SAVEPOINT = db.prepare('SAVEPOINT unit'), RELEASE = db.prepare('RELEASE unit'), ROLLBACK_TO = db.prepare('ROLLBACK TO unit');
  let walFd;
  let syncing = 0;
  let unsynced = [];
  let onIdle;

  function runUnit(unit) {
    let first = null;
    let changed = 1;
    for (let i = 0; i < unit.length; i++) {
      const op = unit[i];
      const st = stmts[op[0]];
      if (requires[op[0]]) {
        if (changed === 0 && st.get(op[1]) === undefined) throw new Error('${REQUIRE_FAILED}');
        continue;
      }
      const info = st.run(op[1]);
      changed = info.changes;
      if (first === null) first = [info.changes, Number(info.lastInsertRowid)];
    }
    return first === null ? [0, 0] : first;
  }

  const message = (e) => (e && e.code ? e.code + ': ' : '') + String((e && e.message) || e);

  function runBatch(units) {
    const results = new Array(units.length);
    BEGIN.run();
    try {
      for (let k = 0; k < units.length; k++) results[k] = runUnit(units[k]);
      COMMIT.run();
      return results;
    } catch (e) {
      if (db.inTransaction) ROLLBACK.run();
    }
    // Something failed: again, one savepoint per unit, so only the failing units are refused.
    BEGIN.run();
    for (let k = 0; k < units.length; k++) {
      SAVEPOINT.run();
      try {
        results[k] = runUnit(units[k]);
        RELEASE.run();
      } catch (e) {
        ROLLBACK_TO.run();
        RELEASE.run();
        results[k] = message(e);
      }
    }
    COMMIT.run();
    return results;
  }

  // batches: [{ id, units, early }], committed as one transaction.
  function commit(batches) {
    const units = batches.length === 1 ? batches[0].units : batches.flatMap((b) => b.units);
    let results;
    try {
      results = runBatch(units);
    } catch (e) {
      if (db.inTransaction) { try { ROLLBACK.run(); } catch {} }
      const err = message(e);
      answer(batches.map((b) => [b.id, b.units.map(() => err)]));
      return;
    }
    // Committed: batches that only need the commit (a call's start: it survives a crash of this
    // process from here on) are answered now; the others once an fsync begun after this commit ends.
    const early = [];
    let at = 0;
    for (const b of batches) {
      const ack = [b.id, results.slice(at, at + b.units.length)];
      at += b.units.length;
      (b.early || !opts.fullSync ? early : unsynced).push(ack);
    }
    if (early.length > 0) answer(early);
    if (opts.syncer) {
      if (unsynced.length > 0) {
        opts.syncer.push(unsynced);
        unsynced = [];
      }
    } else syncWal();
  }

  // Answers from opts.syncer (the inline writer's fsync thread): the acks of each commit covered.
  if (opts.syncer) opts.syncer.onCovered = (groups, e) => synced(groups.length === 1 ? groups[0] : groups.flat(), e);

  // Group fsync on the thread pool, so commits go on meanwhile: each fdatasync covers every
  // commit before it began. Up to opts.maxSyncs run at once (one more starts as soon as there is
  // something to cover); when one ends, it and every one begun before it are answered.
  let started = [];
  function syncWal() {
    while (syncing < opts.maxSyncs && unsynced.length > 0) {
      const covered = unsynced;
      unsynced = [];
      try {
        if (walFd === undefined) walFd = fs.openSync(opts.path + '-wal', 'r');
      } catch (e) {
        return synced(covered, e);
      }
      const entry = { covered };
      started.push(entry);
      syncing++;
      fs.fdatasync(walFd, (e) => {
        syncing--;
        if (e) {
          // Only what this fsync covered fails; the ones begun before it answer for themselves.
          const at = started.indexOf(entry);
          // Not found: already answered, a later fsync covered it.
          if (at >= 0) synced(started.splice(at, 1)[0].covered, e);
        } else {
          // Everything committed before this fsync began is durable now, whatever an earlier
          // fsync still in flight says later.
          const upTo = started.indexOf(entry) + 1;
          for (const x of started.splice(0, upTo)) synced(x.covered, null);
        }
        syncWal();
        if (syncing === 0 && onIdle) onIdle();
      });
    }
  }

  function synced(covered, e) {
    if (e) {
      const err = message(e);
      for (const a of covered) a[1] = a[1].map(() => err);
    }
    answer(covered);
  }

  // Calls cb once no fsync is outstanding, then releases the WAL descriptor.
  function close(cb) {
    const done = () => {
      if (walFd !== undefined) { try { fs.closeSync(walFd); } catch {} walFd = undefined; }
      cb();
    };
    if (syncing > 0) onIdle = done;
    else done();
  }

  return { commit, close };
}
`;

const WORKER_SOURCE = `
const { parentPort, workerData, receiveMessageOnPort } = require('node:worker_threads');
const Database = require(workerData.driver);
${ENGINE_SOURCE}
const db = new Database(workerData.path, { fileMustExist: true });
const engine = createEngine(db, require('node:fs'), workerData.statements, workerData, (acks) => parentPort.postMessage(JSON.stringify(acks)));
let closing = false;
parentPort.on('message', (first) => {
  const batches = [];
  if (first === 'close') closing = true;
  else batches.push(JSON.parse(first));
  for (let m = closing ? null : receiveMessageOnPort(parentPort); m; m = receiveMessageOnPort(parentPort)) {
    if (m.message === 'close') { closing = true; break; }
    batches.push(JSON.parse(m.message));
  }
  if (batches.length > 0) engine.commit(batches);
  if (closing) engine.close(() => {
    try { db.close(); } catch {}
    parentPort.postMessage('closed');
    parentPort.close();
  });
});
`;

interface Engine {
  commit(batches: { id: number; units: Unit[]; early: boolean }[]): void;
  close(cb: () => void): void;
}

type EngineFactory = (
  db: unknown,
  fs: unknown,
  statements: readonly WriterStatement[],
  opts: { path: string; fullSync: boolean; maxSyncs: number; syncer?: WalSyncer<Ack[]> | undefined },
  answer: (acks: Ack[]) => void,
) => Engine;

/**
 * The writer thread's fdatasyncs in flight at once (of libuv's 4 pool threads). Two measured about
 * 10% more calls/s than one on a 2-core machine (bench/pipeline.ts); two leaves pool threads for
 * file work (sandboxes, reads). The inline writer hands its fsyncs to a WalSyncer instead: each
 * fs.fdatasync cost the event loop 10-35 us of thread wake-up (0-10% more calls/s without it, A/B).
 */
const MAX_SYNCS = 2;
let inlineFactory: EngineFactory | undefined;
const engineFactory = (): EngineFactory => (inlineFactory ??= new Function(`${ENGINE_SOURCE}\nreturn createEngine;`)() as EngineFactory);

interface Waiter {
  resolve: (r: unknown) => void;
  reject: (e: Error) => void;
  /** What the unit resolves to instead of its UnitResult, if given. */
  value: unknown;
  /** Passed to onSettled once the unit is answered. */
  tag: string | undefined;
}

export interface SubmitOptions {
  /** Answer once committed, before the fsync (see submit). */
  early?: boolean;
  /** Resolve to this instead of the unit's result, if given. */
  value?: unknown;
  /** Reported to onSettled when the unit is answered (the store counts a rollout's outstanding writes). */
  tag?: string | undefined;
}

/**
 * 'thread': the engine runs in a worker thread (the event loop only posts one message per turn).
 * 'inline': it runs on the event loop at the end of each turn (no thread hand-off: better when
 * cores are few and busy, since every hand-off waits for the scheduler).
 */
export type WriterMode = 'thread' | 'inline';

export class SqliteWriter {
  private readonly worker: Worker | undefined;
  private readonly engine: Engine | undefined;
  /** The inline engine's fsync thread (sync 'full'). */
  private readonly syncer: WalSyncer<Ack[]> | undefined;
  /** This turn's units: answered once durable, and (early) answered once committed. */
  private batch: Unit[] = [];
  private waiters: Waiter[] = [];
  private earlyBatch: Unit[] = [];
  private earlyWaiters: Waiter[] = [];
  private scheduled = false;
  private nextId = 1;
  private readonly inFlight = new Map<number, { waiters: Waiter[]; done: (() => void) | undefined }>();
  private broken: Error | undefined;
  private closed = false;
  /** Settles when every unit submitted so far has been answered. */
  private tail: Promise<void> = Promise.resolve();
  private tailResolve: (() => void) | undefined;
  private refed = false;
  private paused = false;
  private onDrained: (() => void) | undefined;

  /** `db`: the connection the inline engine writes with (the thread opens its own). */
  constructor(path: string, statements: readonly WriterStatement[], fullSync: boolean, mode: WriterMode, db: unknown) {
    if (mode === 'inline') {
      this.syncer = fullSync ? new WalSyncer<Ack[]>(`${path}-wal`) : undefined;
      const opts = { path, fullSync, maxSyncs: MAX_SYNCS, syncer: this.syncer };
      this.engine = engineFactory()(db, fs, statements, opts, (acks) => this.onAcks(acks));
      return;
    }
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, statements, fullSync, driver, maxSyncs: MAX_SYNCS } });
    this.worker.unref();
    this.worker.on('message', (m: unknown) => {
      if (typeof m === 'string' && m !== 'closed') this.onAcks(JSON.parse(m) as Ack[]);
    });
    this.worker.on('error', (e) => this.fail(e));
    this.worker.on('exit', (code) => {
      if (!this.closed) this.fail(new Error(`the SQLite writer thread exited (code ${code})`));
    });
  }

  /** Called after each tagged unit is answered, with whether it failed. */
  onSettled: ((tag: string, failed: boolean) => void) | undefined;

  /**
   * Queues a unit for the batch of this turn; resolves once it is committed and (sync 'full')
   * fsynced. `early`: resolves once committed, before the fsync (it then survives a crash of this
   * process, not a power loss; the fsync that follows covers it).
   */
  submit<T = UnitResult>(unit: Unit, opts: SubmitOptions = {}): Promise<T> {
    if (this.broken || this.closed) {
      // Refused at once: still answered, so a caller counting outstanding units counts it down.
      if (opts.tag !== undefined) this.onSettled?.(opts.tag, true);
      return Promise.reject(this.broken ?? new Error('store is closed'));
    }
    const early = opts.early === true;
    if (early) this.earlyBatch.push(unit);
    else this.batch.push(unit);
    if (!this.scheduled) {
      this.scheduled = true;
      this.tail = new Promise<void>((r) => (this.tailResolve = r));
      setImmediate(() => this.flush());
      // Inline: a second flush in the same check phase takes what the first one's answers led to
      // (a synchronous tool's result, submitted from the microtasks between the two), so a fast
      // call starts, runs and records in one turn of the event loop instead of two.
      if (this.engine) setImmediate(() => this.followUp());
    }
    const waiters = early ? this.earlyWaiters : this.waiters;
    return new Promise<T>((resolve, reject) =>
      waiters.push({ resolve: resolve as (r: unknown) => void, reject, value: opts.value, tag: opts.tag }),
    );
  }

  /** Resolves when everything submitted before this call has been answered (committed or refused). */
  settled(): Promise<void> {
    return this.tail;
  }

  /**
   * Holds commits (the checkpointer's last pass needs a WAL nobody appends to): calls `paused` once
   * every batch sent has been answered, and returns the function that lets commits go again. Units
   * submitted meanwhile wait, and go as one batch after.
   */
  pause(paused: () => void): () => void {
    this.paused = true;
    if (this.inFlight.size === 0) paused();
    else this.onDrained = paused;
    return () => {
      this.onDrained = undefined;
      if (!this.paused) return;
      this.paused = false;
      if (this.scheduled) setImmediate(() => this.flush());
    };
  }

  private followUp(): void {
    if (this.batch.length > 0 || this.earlyBatch.length > 0) this.flush();
  }

  private flush(): void {
    // Paused: stay scheduled; the release flushes.
    if (this.paused) return;
    this.scheduled = false;
    const done = this.tailResolve;
    this.tailResolve = undefined;
    const batches: { id: number; units: Unit[]; early: boolean }[] = [];
    const early = this.earlyBatch.length > 0 ? this.track(batches, this.earlyBatch, this.earlyWaiters, true) : undefined;
    const late = this.batch.length > 0 ? this.track(batches, this.batch, this.waiters, false) : undefined;
    this.batch = [];
    this.waiters = [];
    this.earlyBatch = [];
    this.earlyWaiters = [];
    // The engine answers in order: the last batch of the turn answered means all of it is.
    const last = late ?? early;
    if (last === undefined) return done?.();
    last.done = done;
    if (this.engine) {
      this.engine.commit(batches);
      return;
    }
    const worker = this.worker!;
    if (!this.refed) {
      // Unanswered writes keep the process alive; an idle writer does not.
      worker.ref();
      this.refed = true;
    }
    // One JSON string per batch: cheaper to post than the structured clone of many small arrays.
    for (const b of batches) worker.postMessage(JSON.stringify(b));
  }

  private track(
    batches: { id: number; units: Unit[]; early: boolean }[],
    units: Unit[],
    waiters: Waiter[],
    early: boolean,
  ): { waiters: Waiter[]; done: (() => void) | undefined } {
    const id = this.nextId++;
    const batch = { waiters, done: undefined as (() => void) | undefined };
    this.inFlight.set(id, batch);
    batches.push({ id, units, early });
    return batch;
  }

  private onAcks(acks: Ack[]): void {
    for (const [id, results] of acks) {
      const batch = this.inFlight.get(id);
      if (!batch) continue;
      this.inFlight.delete(id);
      const waiters = batch.waiters;
      for (let k = 0; k < waiters.length; k++) {
        const r = results[k];
        const w = waiters[k]!;
        const failed = typeof r === 'string' || r === undefined;
        if (failed) w.reject(new Error(r ?? 'no answer from the SQLite writer'));
        else w.resolve(w.value === undefined ? r : w.value);
        if (w.tag !== undefined) this.onSettled?.(w.tag, failed);
      }
      batch.done?.();
    }
    if (this.inFlight.size === 0 && this.onDrained) {
      const paused = this.onDrained;
      this.onDrained = undefined;
      paused();
    }
    if (this.inFlight.size === 0 && this.refed && !this.scheduled) {
      this.worker?.unref();
      this.refed = false;
    }
  }

  private fail(e: Error): void {
    this.broken ??= e;
    for (const batch of this.inFlight.values()) {
      for (const w of batch.waiters) {
        w.reject(e);
        if (w.tag !== undefined) this.onSettled?.(w.tag, true);
      }
      batch.done?.();
    }
    this.inFlight.clear();
  }

  /** Sends what is queued, waits for every answer, then closes the writer's connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.paused = false;
    if (this.scheduled) this.flush();
    await this.tail;
    this.closed = true;
    if (this.engine) {
      const engine = this.engine;
      await new Promise<void>((resolve) => engine.close(resolve));
      await this.syncer?.close();
      return;
    }
    const worker = this.worker!;
    if (this.broken) {
      await worker.terminate();
      return;
    }
    await stopWorker(worker, 'close', 'closed', 5000);
  }
}
