// SQLite store (better-sqlite3, WAL), for one server process: one connection, on the event loop.
//
// Every operation is a unit, a function run inside the turn's transaction: the units submitted
// during one turn of the event loop run at its end in one transaction, each in a savepoint of its
// own, so a unit's writes land together or not at all and a failing unit is refused alone. With
// sync 'full' (the default) a turn's units are answered once an fdatasync of the WAL begun after
// its COMMIT has ended (group commit: one fsync on libuv's pool covers every turn committed before
// it began, and the event loop goes on meanwhile), so whatever is acknowledged is on disk; with
// 'normal', once committed. A write marked 'committed' (WriteDurability: a record no promise depends
// on) is answered once committed whatever the sync: it is in the WAL, and the next fdatasync covers it.
// The budget is decided by the statement that records a call, from the
// rollout's row in the same transaction; a rollout's calls are units run one after the other, so
// parallel calls can never overspend. SQLite checkpoints the WAL itself, at commit.
import Database from 'better-sqlite3';
import { closeSync, fdatasync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { errors } from '../errors.js';
import { LIMIT_PLACEHOLDER } from './types.js';
import type { BudgetUsage, GradeRecord, RecordedCall, RolloutSummary } from './records.js';
import { DEFAULT_DOOR, GRADE_COLUMNS, gradesDdl, gradeValues, rowMappers, toDoorSession, type CallRowShape, type DoorSessionRow, type GradeRow, type RolloutRowShape } from './rows.js';
import {
  flagsOfSql,
  insightsDdl,
  listRolloutsSql,
  rolloutPage,
  sqliteDialect,
  sqliteParams,
  statsSql,
  STATS_PARTS,
  toFlag,
  upsertFlagSql,
  type FlagRow,
  type NewFlag,
  type StatsQuery,
  type StatsRows,
} from '../stats/insights.js';
import type {
  BeginCallInput,
  BeginCallResult,
  DoorSessionRecord,
  FinishCallInput,
  GradedRollout,
  GradeWithSample,
  ImportedRollout,
  InsertedGrade,
  ListRolloutsQuery,
  NewDoorSession,
  NewGrade,
  RolloutTally,
  SessionChange,
  Store,
  StoredDoorSession,
  WriteDurability,
} from './types.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS rollouts (
  trace_id TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  item TEXT,
  budget_limit INTEGER NOT NULL,
  budget_used INTEGER NOT NULL DEFAULT 0,
  budget_exceeded INTEGER NOT NULL DEFAULT 0,
  next_seq INTEGER NOT NULL DEFAULT 1,
  last_score REAL,
  -- its recorded calls (next_seq - 1 counts un-begun attempts too: seq is never reused)
  call_count INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rollouts_created ON rollouts (created_at DESC, trace_id DESC);
-- The dataset row, apart: SQLite rewrites a whole row on UPDATE, and the rollouts row is updated
-- on every call (its budget); rollouts.item only says '{}' (the trainer sent an empty row), so the
-- rollouts row stays small. Databases made before this table keep their items in rollouts.item.
CREATE TABLE IF NOT EXISTS rollout_items (
  trace_id TEXT PRIMARY KEY,
  item TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
  trace_id TEXT NOT NULL,
  call_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  tool TEXT NOT NULL,
  arguments TEXT NOT NULL,
  args_hash TEXT NOT NULL,
  output TEXT,
  status TEXT NOT NULL,
  cost INTEGER NOT NULL,
  credential TEXT,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  duration_ms REAL,
  output_bytes INTEGER,
  truncated INTEGER NOT NULL DEFAULT 0,
  sandbox TEXT,
  PRIMARY KEY (trace_id, call_id)
) WITHOUT ROWID;
${gradesDdl('grades', { id: 'INTEGER PRIMARY KEY AUTOINCREMENT', key: 'TEXT', text: 'TEXT', real: 'REAL', int: 'INTEGER' })}
CREATE TABLE IF NOT EXISTS webhook_ids (
  id TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL,
  body_hash TEXT
) WITHOUT ROWID;
-- Which server process made each rollout's sandbox (Store.claimSandbox): after a restart, a rollout
-- whose sandbox an earlier process made has lost its workspace.
CREATE TABLE IF NOT EXISTS rollout_sandboxes (
  trace_id TEXT PRIMARY KEY,
  boot TEXT NOT NULL,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;
-- A door's sessions (Store.createSession): any process that opens this database after a restart serves them.
CREATE TABLE IF NOT EXISTS door_sessions (
  door TEXT NOT NULL,
  id TEXT NOT NULL,
  trace_id TEXT NOT NULL,
  environment TEXT,
  tools TEXT NOT NULL,
  run TEXT,
  state TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 1,
  ended INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  last_used INTEGER NOT NULL,
  PRIMARY KEY (door, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS door_sessions_used ON door_sessions (door, last_used);
${insightsDdl(sqliteDialect, { key: 'TEXT', text: 'TEXT', int: 'INTEGER' })}
`;

type CallRow = CallRowShape<number>;
type RolloutRow = RolloutRowShape<number>;

const { toCall, toGrade, toSummary, budgetOf } = rowMappers<number>({ text: (t) => t, bool: (b) => b === 1 });

const CALL_COLUMNS = `trace_id, call_id, seq, tool, arguments, args_hash, output, status, cost, credential, started_at, finished_at,
  duration_ms, output_bytes, truncated`;

function statements(db: Database.Database) {
  return {
    // A new call: recorded as running and charged, or as refused when its cost would overspend.
    // The rollout row must exist (else nothing is inserted); a recorded call id fails the primary key.
    addCall: db.prepare<Record<string, unknown>, CallRow>(
      `INSERT INTO calls (${CALL_COLUMNS})
       SELECT @trace, @call, next_seq, @tool, @args, @hash, iif(over, over_output, NULL), iif(over, 'budget_exceeded', 'running'),
         iif(over, 0, @cost), @credential, @now, iif(over, @now, NULL), iif(over, 0, NULL), iif(over, length(CAST(over_output AS BLOB)), NULL), 0
       FROM (SELECT next_seq, budget_used + @cost > budget_limit AS over,
               replace(@overOutput, '${LIMIT_PLACEHOLDER}', CAST(CAST(budget_limit AS INTEGER) AS TEXT)) AS over_output
             FROM rollouts WHERE trace_id = @trace)
       RETURNING *`,
    ),
    charge: db.prepare<[number, number, number, string], RolloutRow>(
      `UPDATE rollouts SET budget_used = budget_used + ?, budget_exceeded = budget_exceeded | ?, next_seq = next_seq + 1, call_count = call_count + 1, updated_at = ?
       WHERE trace_id = ? RETURNING budget_used, budget_limit, budget_exceeded`,
    ),
    // Un-begin (Store.unbeginCall): this attempt's running row goes, and its cost comes back.
    dropRunning: db.prepare<[string, string, number], { cost: number }>(
      `DELETE FROM calls WHERE trace_id = ? AND call_id = ? AND seq = ? AND status = 'running' RETURNING cost`,
    ),
    refund: db.prepare('UPDATE rollouts SET budget_used = budget_used - ?, call_count = call_count - 1, updated_at = ? WHERE trace_id = ?'),
    insertCall: db.prepare(`INSERT INTO calls (${CALL_COLUMNS}, sandbox) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    finishCall: db.prepare(
      `UPDATE calls SET output = ?, status = ?, finished_at = ?, duration_ms = ?, output_bytes = ?, truncated = ?, sandbox = ?
       WHERE trace_id = ? AND call_id = ? AND status = 'running'`,
    ),
    getCall: db.prepare<[string, string], CallRow>('SELECT * FROM calls WHERE trace_id = ? AND call_id = ?'),
    listCalls: db.prepare<[string], CallRow>('SELECT * FROM calls WHERE trace_id = ? ORDER BY seq'),
    insertRollout: db.prepare<[string, number, number, string | null, number, number, number, number, number | null, number]>(
      `INSERT INTO rollouts (trace_id, created_at, updated_at, item, budget_limit, budget_used, budget_exceeded, next_seq, last_score, call_count)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // Whether the rollout has a non-empty dataset row (here, or in an older database's rollouts.item).
    hasItem: db.prepare<[string], { full: number }>(
      `SELECT (r.item IS NOT NULL AND r.item <> '{}') OR EXISTS (SELECT 1 FROM rollout_items i WHERE i.trace_id = r.trace_id) AS full
       FROM rollouts r WHERE r.trace_id = ?`,
    ),
    setDoor: db.prepare('UPDATE rollouts SET door = ? WHERE trace_id = ?'),
    // A rollout's run label: the first one it gets is kept.
    setRun: db.prepare<[string, string]>('UPDATE rollouts SET run = ? WHERE trace_id = ? AND run IS NULL'),
    setItem: db.prepare('INSERT OR REPLACE INTO rollout_items (trace_id, item) VALUES (?, ?)'),
    getRollout: db.prepare<[string], RolloutRow>(
      `SELECT r.trace_id, r.created_at, r.updated_at, r.budget_limit, r.budget_used, r.budget_exceeded, r.next_seq, r.last_score, r.door, r.run,
         coalesce(i.item, r.item) AS item FROM rollouts r LEFT JOIN rollout_items i ON i.trace_id = r.trace_id WHERE r.trace_id = ?`,
    ),
    getBudget: db.prepare<[string], RolloutRow>('SELECT budget_used, budget_limit, budget_exceeded FROM rollouts WHERE trace_id = ?'),
    insertGrade: db.prepare(`INSERT INTO grades (${GRADE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    score: db.prepare<[string, number | null, number, string], { calls: number; budget_exceeded: number }>(
      `UPDATE rollouts SET last_score = iif(? = 'ok', ?, last_score), updated_at = ? WHERE trace_id = ?
       RETURNING call_count AS calls, budget_exceeded`,
    ),
    findGrade: db.prepare<[string, string, string, string], GradeRow>(
      `SELECT * FROM grades WHERE trace_id = ? AND grader = ? AND grader_version = ? AND sample_hash = ? AND status = 'ok'
       ORDER BY id DESC LIMIT 1`,
    ),
    listGrades: db.prepare<[string], GradeRow>('SELECT * FROM grades WHERE trace_id = ? ORDER BY id'),
    // New id, an expired entry taken over, or the same body again (the sender's retry): one change.
    // A live entry with another body: none.
    rememberId: db.prepare(
      `INSERT INTO webhook_ids (id, body_hash, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET body_hash = excluded.body_hash, expires_at = max(webhook_ids.expires_at, excluded.expires_at)
       WHERE webhook_ids.expires_at <= ? OR webhook_ids.body_hash = excluded.body_hash`,
    ),
    purgeIds: db.prepare('DELETE FROM webhook_ids WHERE expires_at <= ?'),
    // At boot (markInterrupted): what calls left running were charged goes back, and those of the
    // tools to run again (a JSON array) stop counting as recorded; then they go, and the rest are interrupted.
    refundRunning: db.prepare<{ now: number; rerun: string }>(
      `UPDATE rollouts SET
         budget_used = budget_used - (SELECT sum(c.cost) FROM calls c WHERE c.trace_id = rollouts.trace_id AND c.status = 'running'),
         call_count = call_count - (SELECT count(*) FROM calls c WHERE c.trace_id = rollouts.trace_id AND c.status = 'running'
           AND c.tool IN (SELECT value FROM json_each(@rerun))),
         updated_at = @now
       WHERE trace_id IN (SELECT trace_id FROM calls WHERE status = 'running')`,
    ),
    dropRunningOf: db.prepare<[string]>(`DELETE FROM calls WHERE status = 'running' AND tool IN (SELECT value FROM json_each(?))`),
    interrupt: db.prepare(`UPDATE calls SET status = 'interrupted', output = ?, finished_at = ?, cost = 0 WHERE status = 'running'`),
    claimSandbox: db.prepare('INSERT INTO rollout_sandboxes (trace_id, boot, created_at) VALUES (?, ?, ?) ON CONFLICT (trace_id) DO NOTHING'),
    sandboxBoot: db.prepare<[string], { boot: string }>('SELECT boot FROM rollout_sandboxes WHERE trace_id = ?'),
    addSession: db.prepare(
      `INSERT INTO door_sessions (door, id, trace_id, environment, tools, run, state, created_at, last_used) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // With its rollout's dataset row (here, or in an older database's rollouts.item).
    getSession: db.prepare<[string, string], DoorSessionRow>(
      `SELECT s.*, coalesce(i.item, r.item) AS item FROM door_sessions s
       LEFT JOIN rollouts r ON r.trace_id = s.trace_id LEFT JOIN rollout_items i ON i.trace_id = s.trace_id
       WHERE s.door = ? AND s.id = ?`,
    ),
    updateSession: db.prepare<[string, number, number, number, string | null, string | null, string, string, number]>(
      `UPDATE door_sessions SET state = ?, ended = max(ended, ?), version = version + 1, last_used = ?,
         environment = iif(?, ?, environment), tools = coalesce(?, tools)
       WHERE door = ? AND id = ? AND version = ?`,
    ),
    deleteSession: db.prepare<[string, string], DoorSessionRow>('DELETE FROM door_sessions WHERE door = ? AND id = ? RETURNING *'),
    expireSessions: db.prepare<[string, string, number, number], DoorSessionRow>(
      `DELETE FROM door_sessions WHERE door = ? AND id IN (SELECT id FROM door_sessions WHERE door = ? AND last_used < ? LIMIT ?) RETURNING *`,
    ),
    ping: db.prepare(`INSERT OR REPLACE INTO webhook_ids (id, expires_at) VALUES ('__readyz__', 0)`),
    addFlag: db.prepare<Record<number, unknown>>(upsertFlagSql(sqliteDialect, { traceId: '', kind: '', callId: null, detail: '', at: 0 }).text),
    flags: db.prepare<Record<number, unknown>, FlagRow>(flagsOfSql(sqliteDialect, '').text),
    tally: db.prepare<[string], { calls: number; budget_exceeded: number }>(
      'SELECT call_count AS calls, budget_exceeded FROM rollouts WHERE trace_id = ?',
    ),
  };
}

/** Whether a table has a column (data dirs made by older versions lack the newer ones). */
function hasColumn(db: Database.Database, table: string, column: string): boolean {
  return (db.pragma(`table_info(${table})`) as { name: string }[]).some((c) => c.name === column);
}

/** The dashboard's window statements, prepared once (src/stats/insights.ts). */
function statsStatements(db: Database.Database): Record<keyof StatsRows, Database.Statement<Record<number, unknown>>> {
  const sql = statsSql(sqliteDialect, { since: 0, until: 0, bucketMs: 1 });
  return Object.fromEntries(STATS_PARTS.map((k) => [k, db.prepare(sql[k].text)])) as Record<keyof StatsRows, Database.Statement<Record<number, unknown>>>;
}

const callParams = (c: RecordedCall): unknown[] => [
  c.traceId, c.callId, c.seq, c.tool, c.arguments, c.argsHash, c.output, c.status, c.cost, c.credential, c.startedAt,
  c.finishedAt, c.durationMs, c.outputBytes, c.truncated ? 1 : 0, c.sandbox,
];

const isEmpty = (item: Record<string, unknown>): boolean => Object.keys(item).length === 0;
const tallyOf = (r: { calls: number; budget_exceeded: number } | undefined): RolloutTally | undefined =>
  r && { calls: r.calls, budgetExceeded: r.budget_exceeded === 1 };

interface Unit {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (e: unknown) => void;
  /** Answered once committed, not once fsynced (WriteDurability 'committed'). */
  committed: boolean;
}

export interface SqliteStoreOptions {
  path: string;
  /** full: answers once the WAL is fsynced (survives power loss); normal: once committed (survives kill -9). */
  sync?: 'full' | 'normal';
}

/**
 * How long a turn of 'committed' writes only waits for a durable turn's fdatasync to cover it before it
 * begins its own: one session at a time, the next request's durable write comes within it (ORS's
 * /create_session then /create: one fdatasync, not two), and a burst of them shares one.
 */
export const COMMITTED_SYNC_DELAY_MS = 20;

/** Answers a committed turn's units, or fails them all with the fsync's error. */
type Answer = (e: Error | null) => void;

/** What waits for the next fdatasync: its answer, and whether it covers durable writes (reads then wait too). */
interface Unsynced {
  answer: Answer;
  durable: boolean;
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  private readonly db: Database.Database;
  private readonly s: ReturnType<typeof statements>;
  private readonly stats_: ReturnType<typeof statsStatements>;
  /** Held for the store's life: one process per database. */
  private readonly lock: Database.Database;
  /** The units of this turn, run at its end. */
  private queue: Unit[] = [];
  /** The turn's transaction: each unit in a savepoint (a nested better-sqlite3 transaction). */
  private readonly turn: (units: Unit[]) => ({ value: unknown } | { error: unknown })[];
  /** sync 'full': the WAL, fdatasync'ed before committed turns are answered. */
  private readonly walFd: number | undefined;
  /** Committed turns waiting for an fdatasync to begin, and whether one is running. */
  private unsynced: Unsynced[] = [];
  private syncing: Promise<void> | undefined;
  /** The fdatasync of 'committed'-only turns, begun COMMITTED_SYNC_DELAY_MS after the first of them. */
  private lateSync: NodeJS.Timeout | undefined;
  /** What the running fdatasync answers (it began after each of those turns was committed). */
  private covering: Unsynced[] | undefined;
  /** Committed turns with durable writes whose fdatasync has not ended (queued or running). */
  private durableUnsynced = 0;
  /** An fdatasync failed: what was written may not be on disk, so nothing more is acknowledged. */
  private broken: Error | undefined;
  private closing: Promise<void> | undefined;

  constructor(opts: SqliteStoreOptions) {
    if (opts.path === ':memory:') throw new Error('the SQLite store needs a file (its lock is a file beside it)');
    mkdirSync(dirname(opts.path), { recursive: true });
    this.lock = takeLock(`${opts.path}.lock`, opts.path);
    this.db = new Database(opts.path);
    this.db.pragma('journal_mode = WAL');
    // Commits only write the WAL; with sync 'full' the store fsyncs it itself (syncWal).
    this.db.pragma('synchronous = NORMAL');
    // A WAL that grew under a burst is cut back to this after its next checkpoint.
    this.db.pragma('journal_size_limit = 67108864');
    this.db.exec(SCHEMA);
    // Data dirs made before webhook ids kept their body's hash (their entries expire within 10 min).
    if (!hasColumn(this.db, 'webhook_ids', 'body_hash')) {
      this.db.exec('ALTER TABLE webhook_ids ADD COLUMN body_hash TEXT');
    }
    // Data dirs made before calls kept the sandbox they used: their calls say none (null).
    if (!hasColumn(this.db, 'calls', 'sandbox')) this.db.exec('ALTER TABLE calls ADD COLUMN sandbox TEXT');
    // Data dirs made before rollouts kept their count of recorded calls: counted once, in one commit.
    if (!hasColumn(this.db, 'rollouts', 'call_count')) {
      this.db.transaction(() => {
        this.db.exec('ALTER TABLE rollouts ADD COLUMN call_count INTEGER NOT NULL DEFAULT 0');
        this.db.exec('UPDATE rollouts SET call_count = (SELECT count(*) FROM calls c WHERE c.trace_id = rollouts.trace_id)');
      })();
    }
    // Data dirs made before the record kept each rollout's door: all of them came through Agent RFT's.
    if (!hasColumn(this.db, 'rollouts', 'door')) {
      this.db.exec(`ALTER TABLE rollouts ADD COLUMN door TEXT NOT NULL DEFAULT '${DEFAULT_DOOR}'`);
    }
    // Data dirs made before rollouts carried a run label: theirs have none.
    if (!hasColumn(this.db, 'rollouts', 'run')) this.db.exec('ALTER TABLE rollouts ADD COLUMN run TEXT');
    this.s = statements(this.db);
    this.stats_ = statsStatements(this.db);
    const unit = this.db.transaction((run: () => unknown) => run());
    const turn = this.db.transaction((units: Unit[]) =>
      units.map((u) => {
        try {
          return { value: unit(u.run) };
        } catch (error) {
          return { error };
        }
      }),
    );
    this.turn = (units) => turn.immediate(units);
    if (opts.sync !== 'normal') {
      this.walFd = openSync(`${opts.path}-wal`, 'r');
      // The WAL file's (and database's) directory entries, durable once, before any acknowledgement.
      const dir = openSync(dirname(opts.path), 'r');
      fsyncSync(dir);
      closeSync(dir);
    }
  }

  /**
   * Queues fn for the end of this turn; resolves once the turn's transaction is committed and (durable,
   * sync 'full') the WAL holding it fsynced.
   */
  private unit<T>(run: () => T, durability: WriteDurability = 'durable'): Promise<T> {
    if (this.closing || this.broken) return Promise.reject(this.broken ?? new Error('store is closed'));
    return new Promise<T>((resolve, reject) => {
      if (this.queue.push({ run, resolve: resolve as (v: unknown) => void, reject, committed: durability === 'committed' }) === 1) setImmediate(this.flush);
    });
  }

  private readonly flush = (): void => {
    const units = this.queue;
    if (units.length === 0) return;
    this.queue = [];
    let results;
    try {
      results = this.turn(units);
    } catch (e) {
      for (const u of units) u.reject(e);
      return;
    }
    const answer = (e: Error | null, which: (u: Unit) => boolean) =>
      units.forEach((u, k) => {
        if (!which(u)) return;
        const r = results[k]!;
        if (e) u.reject(e);
        else if ('error' in r) u.reject(r.error);
        else u.resolve(r.value);
      });
    if (this.walFd === undefined) return answer(null, () => true);
    // 'committed' units now (they are in the WAL); the rest once the WAL is fsynced. A turn of 'committed'
    // units only is on disk at the next durable turn's fdatasync, or COMMITTED_SYNC_DELAY_MS later at most.
    answer(null, (u) => u.committed);
    const durable = units.some((u) => !u.committed);
    if (durable) this.durableUnsynced++;
    this.unsynced.push({ answer: (e) => answer(e, (u) => !u.committed), durable });
    if (this.syncing) return;
    if (durable) this.syncing = this.syncWal(this.walFd);
    else this.lateSync ??= setTimeout(this.syncLate, COMMITTED_SYNC_DELAY_MS);
  };

  private readonly syncLate = (): void => {
    this.lateSync = undefined;
    if (!this.syncing && this.unsynced.length > 0 && this.walFd !== undefined) this.syncing = this.syncWal(this.walFd);
  };

  /** fdatasyncs while committed turns wait; each covers every turn committed before it began. */
  private async syncWal(fd: number): Promise<void> {
    while (this.unsynced.length > 0) {
      const covered = this.unsynced;
      this.unsynced = [];
      this.covering = covered;
      const e = await new Promise<Error | null>((resolve) => fdatasync(fd, resolve));
      this.covering = undefined;
      if (e) this.broken ??= e;
      for (const { answer, durable } of covered) {
        if (durable) this.durableUnsynced--;
        answer(e);
      }
    }
    this.syncing = undefined;
  }

  /**
   * A read sees every write submitted before it, and answers only once what it saw is durable: after
   * writes still queued, it runs as a unit; while committed turns with durable writes are not yet
   * fsynced, it runs now and is answered with them, by the fdatasync under way when it covers every one of
   * them, else by the next (no transaction of its own).
   * Unsynced 'committed' writes alone do not hold it: their answer did not wait either.
   */
  private read<T>(fn: () => T): Promise<T> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.queue.length > 0) return this.unit(fn);
    return new Promise<T>((resolve, reject) => {
      const value = fn();
      if (this.durableUnsynced === 0 || this.walFd === undefined) return resolve(value);
      const waiting: Unsynced = { answer: (e) => (e ? reject(e) : resolve(value)), durable: false };
      // Every durable turn it saw was committed before the running fdatasync began: that one covers them
      // (one session at a time, a reply's last write is being fsynced when the next request reads).
      if (this.covering && !this.unsynced.some((u) => u.durable)) return void this.covering.push(waiting);
      this.unsynced.push(waiting);
      this.syncing ??= this.syncWal(this.walFd);
    });
  }

  beginCall(input: BeginCallInput): Promise<BeginCallResult> {
    return this.unit(() => this.admit(input));
  }

  private admit(i: BeginCallInput): BeginCallResult {
    const params = {
      trace: i.traceId, call: i.callId, tool: i.tool, args: i.arguments, hash: i.argsHash, cost: i.cost, credential: i.credential,
      now: i.now, overOutput: i.overBudgetOutput,
    };
    let row: CallRow | undefined;
    try {
      row = this.s.addCall.get(params);
      if (!row) {
        // The rollout's first call: its row (and dataset row, serialized once) comes with it.
        this.createRollout(i.traceId, i.item, i.budgetLimit, i.now);
        row = this.s.addCall.get(params)!;
      }
    } catch (e) {
      if ((e as { code?: unknown }).code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') throw e;
      const call = toCall(this.s.getCall.get(i.traceId, i.callId)!);
      return { kind: call.tool === i.tool && call.argsHash === i.argsHash ? 'existing' : 'conflict', call };
    }
    const over = row.status === 'budget_exceeded';
    const budget = budgetOf(this.s.charge.get(row.cost, over ? 1 : 0, i.now, i.traceId)!);
    return { kind: over ? 'over_budget' : 'started', call: toCall(row), budget };
  }

  private createRollout(traceId: string, item: Record<string, unknown> | null, limit: number, now: number): void {
    const empty = item !== null && isEmpty(item);
    this.s.insertRollout.run(traceId, now, now, empty ? '{}' : null, limit, 0, 0, 1, null, 0);
    if (item && !empty) this.s.setItem.run(traceId, JSON.stringify(item));
  }

  /**
   * Creates the rollout if absent (true), or fills its empty row (see Store.ensureRollout). The row is
   * serialized only if it is to be written.
   */
  private ensure(traceId: string, item: Record<string, unknown> | null, limit: number, now: number): boolean {
    const r = this.s.hasItem.get(traceId);
    if (!r) {
      this.createRollout(traceId, item, limit, now);
      return true;
    }
    if (!r.full && item && !isEmpty(item)) this.s.setItem.run(traceId, JSON.stringify(item));
    return false;
  }

  unbeginCall(traceId: string, callId: string, seq: number, now: number): Promise<boolean> {
    return this.unit(() => {
      const row = this.s.dropRunning.get(traceId, callId, seq);
      if (!row) return false;
      this.s.refund.run(row.cost, now, traceId);
      return true;
    });
  }

  finishCall(traceId: string, callId: string, r: FinishCallInput): Promise<void> {
    return this.unit(() => {
      const { changes } = this.s.finishCall.run(r.output, r.status, r.finishedAt, r.durationMs, r.outputBytes, r.truncated ? 1 : 0, r.sandbox ?? null, traceId, callId);
      // A finish that changed nothing is fine if the call is recorded (already finished, or interrupted).
      if (changes === 0 && !this.s.getCall.get(traceId, callId)) throw new Error(`call ${callId} of ${traceId} is not recorded as running`);
    });
  }

  ensureRollout(traceId: string, item: Record<string, unknown> | null, budgetLimit: number, now: number): Promise<void> {
    return this.unit(() => void this.ensure(traceId, item, budgetLimit, now));
  }

  openRollout(traceId: string, door: string, item: Record<string, unknown> | null, budgetLimit: number, now: number, run?: string): Promise<void> {
    return this.unit(() => {
      this.ensure(traceId, item, budgetLimit, now);
      this.s.setDoor.run(door, traceId);
      if (run !== undefined) this.s.setRun.run(run, traceId);
    });
  }

  labelRollout(traceId: string, run: string): Promise<void> {
    return this.unit(() => void this.s.setRun.run(run, traceId));
  }

  insertGrade(g: NewGrade, rollout?: GradedRollout): Promise<InsertedGrade> {
    return this.unit(() => {
      if (rollout && this.ensure(g.traceId, rollout.item, rollout.budgetLimit, rollout.now) && rollout.door !== undefined) this.s.setDoor.run(rollout.door, g.traceId);
      if (rollout?.run !== undefined) this.s.setRun.run(rollout.run, g.traceId);
      const { lastInsertRowid } = this.s.insertGrade.run(gradeValues(g));
      const tally = tallyOf(this.s.score.get(g.status, g.score, g.createdAt, g.traceId));
      if (tally?.calls === 0 && rollout?.flagIfNoCalls) this.flag({ ...rollout.flagIfNoCalls, traceId: g.traceId });
      return { record: { ...g, sample: g.sample ?? null, id: Number(lastInsertRowid) }, tally };
    }, rollout?.durability);
  }

  importRollout(r: ImportedRollout): Promise<'imported' | 'exists'> {
    return this.unit(() => {
      if (this.s.getBudget.get(r.traceId)) return 'exists';
      const nextSeq = r.calls.reduce((m, c) => Math.max(m, c.seq), 0) + 1;
      const lastScore = r.grades.findLast((g) => g.status === 'ok')?.score ?? null;
      const { budget: b, item } = r;
      const empty = item !== null && isEmpty(item);
      this.s.insertRollout.run(r.traceId, r.createdAt, r.updatedAt, empty ? '{}' : null, b.limit, b.used, b.exceeded ? 1 : 0, nextSeq, lastScore, r.calls.length);
      if (r.door !== undefined) this.s.setDoor.run(r.door, r.traceId);
      if (r.run !== undefined) this.s.setRun.run(r.run, r.traceId);
      if (item && !empty) this.s.setItem.run(r.traceId, JSON.stringify(item));
      for (const c of r.calls) this.s.insertCall.run(callParams({ ...c, traceId: r.traceId }));
      for (const g of r.grades) this.s.insertGrade.run(gradeValues({ ...g, traceId: r.traceId }));
      return 'imported';
    });
  }

  rememberWebhookId(id: string, bodyHash: string, expiresAt: number, now: number): Promise<boolean> {
    return this.unit(() => {
      if (Math.random() < 0.01) this.s.purgeIds.run(now);
      return this.s.rememberId.run(id, bodyHash, expiresAt, now).changes === 1;
    });
  }

  markInterrupted(output: string, now: number, rerunTools: readonly string[] = []): Promise<number> {
    return this.unit(() => {
      const rerun = JSON.stringify(rerunTools);
      this.s.refundRunning.run({ now, rerun });
      this.s.dropRunningOf.run(rerun);
      return this.s.interrupt.run(output, now).changes;
    });
  }

  claimSandbox(traceId: string, boot: string, now: number): Promise<string> {
    return this.unit(() => {
      this.s.claimSandbox.run(traceId, boot, now);
      return this.s.sandboxBoot.get(traceId)!.boot;
    });
  }

  createSession(n: NewDoorSession, durability?: WriteDurability): Promise<void> {
    return this.unit(() => void this.s.addSession.run(n.door, n.id, n.traceId, n.environment, JSON.stringify(n.tools), n.run, n.state, n.createdAt, n.createdAt), durability);
  }

  getSession(door: string, id: string): Promise<StoredDoorSession | undefined> {
    return this.read(() => {
      const r = this.s.getSession.get(door, id);
      return r && { ...toDoorSession(r), item: r.item ? (JSON.parse(r.item) as Record<string, unknown>) : null };
    });
  }

  updateSession(door: string, id: string, version: number, change: SessionChange, now: number): Promise<boolean> {
    const b = change.bound;
    return this.unit(
      () => this.s.updateSession.run(change.state, change.ended ? 1 : 0, now, b ? 1 : 0, b?.environment ?? null, b ? JSON.stringify(b.tools) : null, door, id, version).changes === 1,
    );
  }

  deleteSession(door: string, id: string, durability?: WriteDurability): Promise<DoorSessionRecord | undefined> {
    return this.unit(() => {
      const r = this.s.deleteSession.get(door, id);
      return r && toDoorSession(r);
    }, durability);
  }

  expireSessions(door: string, before: number, limit: number): Promise<DoorSessionRecord[]> {
    return this.unit(() => this.s.expireSessions.all(door, door, before, limit).map((r) => toDoorSession(r)));
  }

  sandboxBoot(traceId: string): Promise<string | undefined> {
    return this.read(() => this.s.sandboxBoot.get(traceId)?.boot);
  }

  addFlag(f: NewFlag): Promise<void> {
    return this.unit(() => this.flag(f));
  }

  private flag(f: NewFlag): void {
    this.s.addFlag.run(sqliteParams(upsertFlagSql(sqliteDialect, f).params));
  }

  rolloutTally(traceId: string): Promise<RolloutTally | undefined> {
    return this.read(() => tallyOf(this.s.tally.get(traceId)));
  }

  stats(q: StatsQuery): Promise<StatsRows> {
    return this.read(() => {
      const sql = statsSql(sqliteDialect, q);
      const parts = q.parts ?? STATS_PARTS;
      const run = <K extends keyof StatsRows>(k: K) => (parts.includes(k) ? (this.stats_[k].all(sqliteParams(sql[k].params)) as StatsRows[K]) : []);
      return { calls: run('calls'), rolloutsStarted: run('rolloutsStarted'), grades: run('grades'), flags: run('flags') };
    });
  }

  async ping(): Promise<void> {
    await this.unit(() => this.s.ping.run());
  }

  getCall(traceId: string, callId: string): Promise<RecordedCall | undefined> {
    return this.read(() => {
      const r = this.s.getCall.get(traceId, callId);
      return r && toCall(r);
    });
  }

  listCalls(traceId: string): Promise<RecordedCall[]> {
    return this.read(() => this.s.listCalls.all(traceId).map(toCall));
  }

  getBudget(traceId: string, defaultLimit: number): Promise<BudgetUsage> {
    return this.read(() => {
      const r = this.s.getBudget.get(traceId);
      return r ? budgetOf(r) : { used: 0, limit: defaultLimit, exceeded: false };
    });
  }

  findGrade(traceId: string, grader: string, version: string, sampleHash: string): Promise<GradeRecord | undefined> {
    return this.read(() => {
      const r = this.s.findGrade.get(traceId, grader, version, sampleHash);
      return r && toGrade(r);
    });
  }

  listGrades(traceId: string): Promise<GradeWithSample[]> {
    return this.read(() => this.s.listGrades.all(traceId).map(toGrade));
  }

  listRollouts(q: ListRolloutsQuery): Promise<{ rollouts: RolloutSummary[]; nextCursor: string | null }> {
    return this.read(() => {
      const sql = listRolloutsSql(sqliteDialect, q);
      if (!sql) return { rollouts: [], nextCursor: null };
      return rolloutPage(this.db.prepare<Record<number, unknown>, RolloutRow>(sql.text).all(sqliteParams(sql.params)), q.limit, toSummary);
    });
  }

  getRollout(traceId: string) {
    return this.read(() => {
      const r = this.s.getRollout.get(traceId);
      if (!r) return undefined;
      const callsList = this.s.listCalls.all(traceId).map(toCall);
      const integrityFlags = this.s.flags.all(sqliteParams([traceId])).map((f) => toFlag(f));
      return {
        ...toSummary({ ...r, calls: callsList.length }),
        flags: integrityFlags.map((f) => f.kind),
        item: r.item ? (JSON.parse(r.item) as Record<string, unknown>) : null,
        callsList,
        grades: this.s.listGrades.all(traceId).map(toGrade),
        integrityFlags,
      };
    });
  }

  close(): Promise<void> {
    return (this.closing ??= (async () => {
      this.flush();
      clearTimeout(this.lateSync);
      this.syncLate();
      await this.syncing;
      if (this.walFd !== undefined) closeSync(this.walFd);
      this.db.close();
      this.lock.close();
    })());
  }
}

/**
 * An exclusive lock on a small side file, kept until closed (or the process dies: the lock is the
 * operating system's). A second process, or a second store in this one, is refused.
 */
function takeLock(lockPath: string, storePath: string): Database.Database {
  const lock = new Database(lockPath);
  try {
    lock.pragma('busy_timeout = 0');
    lock.pragma('journal_mode = OFF');
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE; COMMIT');
    return lock;
  } catch (e) {
    lock.close();
    if ((e as { code?: unknown }).code === 'SQLITE_BUSY') throw errors.storeInUse(storePath);
    throw e;
  }
}
