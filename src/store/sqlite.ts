// SQLite store (better-sqlite3, WAL). Every write is one short transaction, so a call's insert and
// its budget charge commit together and parallel calls of a rollout can never overspend.
import Database from 'better-sqlite3';
import { closeSync, fdatasync, mkdirSync, openSync } from 'node:fs';
import { Checkpointer } from './checkpointer.js';
import { rowMappers, type CallRowShape, type GradeRow, type RolloutRowShape } from './rows.js';
import { dirname } from 'node:path';
import type { BudgetUsage, GradeRecord, RecordedCall, RolloutSummary } from '../rollouts/types.js';
import type {
  BeginCallInput,
  BeginCallResult,
  FinishCallInput,
  GradeWithSample,
  ImportedRollout,
  ListRolloutsQuery,
  NewGrade,
  Store,
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
  last_score REAL
);
CREATE INDEX IF NOT EXISTS rollouts_created ON rollouts (created_at DESC, trace_id DESC);
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
  PRIMARY KEY (trace_id, call_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS grades (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  trace_id TEXT NOT NULL,
  grader TEXT NOT NULL,
  grader_version TEXT NOT NULL,
  sample_hash TEXT NOT NULL,
  sample TEXT NOT NULL,
  status TEXT NOT NULL,
  score REAL,
  subscores TEXT,
  explanation TEXT,
  error TEXT,
  credential TEXT,
  source TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  duration_ms REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS grades_lookup ON grades (trace_id, grader, grader_version, sample_hash);
CREATE TABLE IF NOT EXISTS webhook_ids (
  id TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
`;

type CallRow = CallRowShape<number>;
type RolloutRow = RolloutRowShape<number>;

type LedgerRow = Pick<RolloutRow, 'budget_limit' | 'budget_used' | 'budget_exceeded' | 'next_seq'>;

const { toCall, toGrade, toSummary, budgetOf } = rowMappers<number>({ text: (t) => t, bool: (b) => b === 1 });

export interface SqliteStoreOptions {
  path: string;
  sync?: 'full' | 'normal';
}

/**
 * Group commit: writes run synchronously, each in its own savepoint, inside one open transaction
 * that commits on the next turn of the event loop, so one fsync covers every call that arrived
 * meanwhile. No promise resolves before the commit that holds its write is durable (reads wait
 * too, since they may have seen uncommitted rows), so "acknowledged" still means "on disk".
 *
 * Nothing slow runs on the event loop: SQLite itself commits with synchronous=NORMAL (no fsync),
 * and with sync 'full' the WAL is then fdatasync'ed on libuv's thread pool before the batch's
 * promises resolve, which is the durability of synchronous=FULL. Checkpoints run in a worker
 * thread (see checkpointer.ts).
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  private readonly db: Database.Database;
  private waiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private commitScheduled = false;
  private readonly fullSync: boolean;
  private readonly path: string;
  private walFd: number | undefined;
  /** Settles when every commit so far is durable (the last fsync issued). */
  private durable: Promise<void> = Promise.resolve();
  private readonly checkpointer: Checkpointer | undefined;
  private readonly stmt;
  private readonly beginTx;
  private readonly importTx;
  /** One prepared savepoint wrapper, reused: building a transaction function per write is costly. */
  private readonly inSavepoint: (fn: () => unknown) => unknown;

  constructor(opts: SqliteStoreOptions) {
    if (opts.path !== ':memory:') mkdirSync(dirname(opts.path), { recursive: true });
    this.path = opts.path;
    this.fullSync = opts.sync !== 'normal' && opts.path !== ':memory:';
    this.db = new Database(opts.path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('cache_size = -65536');
    // Keep the WAL from growing without bound once checkpointed.
    this.db.pragma('journal_size_limit = 67108864');
    if (opts.path !== ':memory:') {
      this.db.pragma('wal_autocheckpoint = 0');
      this.checkpointer = new Checkpointer(opts.path);
    }
    this.db.exec(SCHEMA);
    const db = this.db;
    this.stmt = {
      getRollout: db.prepare<[string], RolloutRow>('SELECT * FROM rollouts WHERE trace_id = ?'),
      // The hot path never reads the row (item, up to 1 MB): only the ledger columns.
      getLedger: db.prepare<[string], LedgerRow>(
        'SELECT budget_limit, budget_used, budget_exceeded, next_seq FROM rollouts WHERE trace_id = ?',
      ),
      fillRollout: db.prepare(
        `INSERT INTO rollouts (trace_id, created_at, updated_at, item, budget_limit) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (trace_id) DO UPDATE SET item = excluded.item
         WHERE excluded.item IS NOT NULL AND excluded.item <> '{}' AND (rollouts.item IS NULL OR rollouts.item = '{}')`,
      ),
      insertRollout: db.prepare(
        'INSERT OR IGNORE INTO rollouts (trace_id, created_at, updated_at, item, budget_limit) VALUES (?, ?, ?, ?, ?)',
      ),
      charge: db.prepare(
        'UPDATE rollouts SET budget_used = budget_used + ?, next_seq = next_seq + 1, updated_at = ? WHERE trace_id = ?',
      ),
      refuse: db.prepare('UPDATE rollouts SET budget_exceeded = 1, next_seq = next_seq + 1, updated_at = ? WHERE trace_id = ?'),
      getCall: db.prepare<[string, string], CallRow>('SELECT * FROM calls WHERE trace_id = ? AND call_id = ?'),
      listCalls: db.prepare<[string], CallRow>('SELECT * FROM calls WHERE trace_id = ? ORDER BY seq'),
      // Positional parameters: binding by name costs several microseconds per call on the hot path.
      insertCall: db.prepare<unknown[]>(
        `INSERT INTO calls (trace_id, call_id, seq, tool, arguments, args_hash, output, status, cost, credential, started_at,
           finished_at, duration_ms, output_bytes, truncated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      finishCall: db.prepare(
        `UPDATE calls SET output = ?, status = ?, finished_at = ?, duration_ms = ?, output_bytes = ?, truncated = ?
         WHERE trace_id = ? AND call_id = ? AND status = 'running'`,
      ),
      touch: db.prepare('UPDATE rollouts SET updated_at = ? WHERE trace_id = ?'),
      findGrade: db.prepare<[string, string, string, string], GradeRow>(
        `SELECT * FROM grades WHERE trace_id = ? AND grader = ? AND grader_version = ? AND sample_hash = ? AND status = 'ok'
         ORDER BY id DESC LIMIT 1`,
      ),
      insertGrade: db.prepare(
        `INSERT INTO grades (trace_id, grader, grader_version, sample_hash, sample, status, score, subscores, explanation, error,
           credential, source, created_at, duration_ms)
         VALUES (@trace_id, @grader, @grader_version, @sample_hash, @sample, @status, @score, @subscores, @explanation, @error,
           @credential, @source, @created_at, @duration_ms)`,
      ),
      setScore: db.prepare('UPDATE rollouts SET last_score = ?, updated_at = ? WHERE trace_id = ?'),
      listGrades: db.prepare<[string], GradeRow>('SELECT * FROM grades WHERE trace_id = ? ORDER BY id'),
      gradeById: db.prepare<[number], GradeRow>('SELECT * FROM grades WHERE id = ?'),
      countCalls: db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM calls WHERE trace_id = ?'),
      rememberId: db.prepare('INSERT OR IGNORE INTO webhook_ids (id, expires_at) VALUES (?, ?)'),
      refreshExpiredId: db.prepare('UPDATE webhook_ids SET expires_at = ? WHERE id = ? AND expires_at <= ?'),
      purgeIds: db.prepare('DELETE FROM webhook_ids WHERE expires_at <= ?'),
      interrupt: db.prepare(
        `UPDATE calls SET status = 'interrupted', output = ?, finished_at = ? WHERE status = 'running'`,
      ),
      ping: db.prepare('INSERT OR REPLACE INTO webhook_ids (id, expires_at) VALUES (?, ?)'),
    };

    this.inSavepoint = db.transaction((fn: () => unknown) => fn());

    // These run inside write(), i.e. in a savepoint of the batch transaction.
    this.beginTx = (input: BeginCallInput): BeginCallResult => {
      let r = this.stmt.getLedger.get(input.traceId);
      if (!r) {
        // The row (up to 1 MB) is serialized once, when its rollout starts.
        this.stmt.insertRollout.run(input.traceId, input.now, input.now, input.item ? JSON.stringify(input.item) : null, input.budgetLimit);
        r = { budget_limit: input.budgetLimit, budget_used: 0, budget_exceeded: 0, next_seq: 1 };
      } else {
        const existing = this.stmt.getCall.get(input.traceId, input.callId);
        if (existing) {
          const call = toCall(existing);
          const same = existing.args_hash === input.argsHash && existing.tool === input.tool;
          return same ? { kind: 'existing', call } : { kind: 'conflict', call };
        }
      }
      const base = {
        trace_id: input.traceId,
        call_id: input.callId,
        seq: r.next_seq,
        tool: input.tool,
        arguments: input.arguments,
        args_hash: input.argsHash,
        credential: input.credential,
        started_at: input.now,
      };
      if (r.budget_used + input.cost > r.budget_limit) {
        const row: CallRow = {
          ...base,
          output: input.overBudgetOutput,
          status: 'budget_exceeded',
          cost: 0,
          finished_at: input.now,
          duration_ms: 0,
          output_bytes: Buffer.byteLength(input.overBudgetOutput),
          truncated: 0,
        };
        this.insertCallRow(row);
        this.stmt.refuse.run(input.now, input.traceId);
        return { kind: 'over_budget', call: toCall(row), budget: { used: r.budget_used, limit: r.budget_limit, exceeded: true } };
      }
      const row: CallRow = {
        ...base,
        output: null,
        status: 'running',
        cost: input.cost,
        finished_at: null,
        duration_ms: null,
        output_bytes: null,
        truncated: 0,
      };
      this.insertCallRow(row);
      this.stmt.charge.run(input.cost, input.now, input.traceId);
      return {
        kind: 'started',
        call: toCall(row),
        budget: { used: r.budget_used + input.cost, limit: r.budget_limit, exceeded: r.budget_exceeded === 1 },
      };
    };

    this.importTx = (r: ImportedRollout): 'imported' | 'exists' => {
      if (this.stmt.getLedger.get(r.traceId)) return 'exists';
      this.stmt.insertRollout.run(r.traceId, r.createdAt, r.updatedAt, r.item ? JSON.stringify(r.item) : null, r.budget.limit);
      db.prepare('UPDATE rollouts SET budget_used = ?, budget_exceeded = ?, next_seq = ? WHERE trace_id = ?').run(
        r.budget.used,
        r.budget.exceeded ? 1 : 0,
        r.calls.reduce((m, c) => Math.max(m, c.seq), 0) + 1,
        r.traceId,
      );
      for (const c of r.calls) {
        this.insertCallRow({
          trace_id: r.traceId,
          call_id: c.callId,
          seq: c.seq,
          tool: c.tool,
          arguments: c.arguments,
          args_hash: c.argsHash,
          output: c.output,
          status: c.status,
          cost: c.cost,
          credential: c.credential,
          started_at: c.startedAt,
          finished_at: c.finishedAt,
          duration_ms: c.durationMs,
          output_bytes: c.outputBytes,
          truncated: c.truncated ? 1 : 0,
        });
      }
      let last: number | null = null;
      for (const g of r.grades) {
        this.stmt.insertGrade.run(this.gradeParams({ ...g, traceId: r.traceId }));
        if (g.status === 'ok') last = g.score;
      }
      if (last !== null) this.stmt.setScore.run(last, r.updatedAt, r.traceId);
      return 'imported';
    };
  }

  private insertCallRow(r: CallRow): void {
    this.stmt.insertCall.run(
      r.trace_id, r.call_id, r.seq, r.tool, r.arguments, r.args_hash, r.output, r.status, r.cost, r.credential, r.started_at,
      r.finished_at, r.duration_ms, r.output_bytes, r.truncated,
    );
  }

  private settle<T>(value: T): Promise<T> {
    if (!this.db.inTransaction) return this.durable.then(() => value);
    return new Promise<T>((resolve, reject) => this.waiters.push({ resolve: () => resolve(value), reject }));
  }

  /** fdatasync of the WAL on the thread pool; chained so batches become durable in order. */
  private syncWal(): Promise<void> {
    if (!this.fullSync) return Promise.resolve();
    this.walFd ??= openSync(`${this.path}-wal`, 'r');
    const fd = this.walFd;
    const previous = this.durable;
    const mine = new Promise<void>((resolve, reject) => fdatasync(fd, (e) => (e ? reject(e) : resolve())));
    return Promise.all([previous, mine]).then(() => undefined);
  }

  /**
   * Runs fn in a savepoint of the open batch transaction (so a failing write leaves no trace in the
   * batch); resolves once the batch is committed. `single` marks a lone statement, atomic by itself.
   */
  private write<T>(fn: () => T, single = false, waitForDisk = true): Promise<T> {
    if (!this.db.open) return Promise.reject(new Error('store is closed'));
    if (!this.db.inTransaction) this.db.exec('BEGIN IMMEDIATE');
    if (!this.commitScheduled) {
      this.commitScheduled = true;
      setImmediate(() => this.commit());
    }
    let value: T;
    try {
      value = single ? fn() : this.savepoint(fn);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    return waitForDisk ? this.settle(value) : Promise.resolve(value);
  }

  private savepoint<T>(fn: () => T): T {
    return this.inSavepoint(fn) as T;
  }

  private read<T>(fn: () => T): Promise<T> {
    try {
      return this.settle(fn());
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  private commit(): void {
    this.commitScheduled = false;
    const waiters = this.waiters;
    this.waiters = [];
    if (!this.db.open || !this.db.inTransaction) {
      for (const w of waiters) w.reject(new Error('store is closed'));
      return;
    }
    try {
      this.db.exec('COMMIT');
    } catch (e) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      for (const w of waiters) w.reject(e as Error);
      return;
    }
    const durable = this.syncWal();
    this.durable = durable.catch(() => undefined);
    durable.then(
      () => waiters.forEach((w) => w.resolve()),
      (e: Error) => waiters.forEach((w) => w.reject(e)),
    );
  }

  private gradeParams(g: NewGrade): Record<string, unknown> {
    return {
      trace_id: g.traceId,
      grader: g.grader,
      grader_version: g.graderVersion,
      sample_hash: g.sampleHash,
      sample: JSON.stringify(g.sample ?? null),
      status: g.status,
      score: g.score,
      subscores: g.subscores ? JSON.stringify(g.subscores) : null,
      explanation: g.explanation,
      error: g.error,
      credential: g.credential,
      source: g.source,
      created_at: g.createdAt,
      duration_ms: g.durationMs,
    };
  }

  beginCall(input: BeginCallInput): Promise<BeginCallResult> {
    return this.write(() => this.beginTx(input), false, input.durable !== false);
  }

  finishCall(traceId: string, callId: string, r: FinishCallInput): Promise<void> {
    return this.write(() => {
      const done = this.stmt.finishCall.run(r.output, r.status, r.finishedAt, r.durationMs, r.outputBytes, r.truncated ? 1 : 0, traceId, callId);
      // A start that was answered before reaching the disk (read-only tools) and then lost with a
      // failed commit: the result must not be acknowledged as recorded.
      if (done.changes === 0 && !this.stmt.getCall.get(traceId, callId)) {
        throw new Error(`call ${callId} of ${traceId} is not recorded as running`);
      }
    }, true);
  }

  getCall(traceId: string, callId: string): Promise<RecordedCall | undefined> {
    return this.read(() => {
      const r = this.stmt.getCall.get(traceId, callId);
      return r ? toCall(r) : undefined;
    });
  }

  listCalls(traceId: string): Promise<RecordedCall[]> {
    return this.read(() => this.stmt.listCalls.all(traceId).map(toCall));
  }

  getBudget(traceId: string, defaultLimit: number): Promise<BudgetUsage> {
    return this.read(() => {
      const r = this.stmt.getLedger.get(traceId);
      return r ? budgetOf(r) : { used: 0, limit: defaultLimit, exceeded: false };
    });
  }

  ensureRollout(traceId: string, item: Record<string, unknown> | null, budgetLimit: number, now: number): Promise<void> {
    return this.write(() => {
      this.stmt.fillRollout.run(traceId, now, now, item ? JSON.stringify(item) : null, budgetLimit);
    }, true);
  }

  findGrade(traceId: string, grader: string, version: string, sampleHash: string): Promise<GradeRecord | undefined> {
    return this.read(() => {
      const r = this.stmt.findGrade.get(traceId, grader, version, sampleHash);
      return r ? toGrade(r) : undefined;
    });
  }

  insertGrade(g: NewGrade): Promise<GradeRecord> {
    return this.write(() => {
      const info = this.stmt.insertGrade.run(this.gradeParams(g));
      if (g.status === 'ok') this.stmt.setScore.run(g.score, g.createdAt, g.traceId);
      else this.stmt.touch.run(g.createdAt, g.traceId);
      return toGrade(this.stmt.gradeById.get(Number(info.lastInsertRowid))!);
    });
  }

  listGrades(traceId: string): Promise<GradeWithSample[]> {
    return this.read(() => this.stmt.listGrades.all(traceId).map(toGrade));
  }

  listRollouts(q: ListRolloutsQuery): Promise<{ rollouts: RolloutSummary[]; nextCursor: string | null }> {
    return this.read(() => this.listRolloutsNow(q));
  }

  private listRolloutsNow(q: ListRolloutsQuery): { rollouts: RolloutSummary[]; nextCursor: string | null } {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.cursor) {
      const [at, id] = Buffer.from(q.cursor, 'base64url').toString().split('|', 2);
      where.push('(created_at < ? OR (created_at = ? AND trace_id < ?))');
      params.push(Number(at), Number(at), id ?? '');
    }
    if (q.since !== undefined) {
      where.push('updated_at >= ?');
      params.push(q.since);
    }
    const rows = this.db
      .prepare<unknown[], RolloutRow>(
        `SELECT r.*, (SELECT count(*) FROM calls c WHERE c.trace_id = r.trace_id) AS calls FROM rollouts r
         ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY created_at DESC, trace_id DESC LIMIT ?`,
      )
      .all(...params, q.limit + 1);
    const page = rows.slice(0, q.limit);
    const last = page[page.length - 1];
    const nextCursor =
      rows.length > q.limit && last ? Buffer.from(`${last.created_at}|${last.trace_id}`).toString('base64url') : null;
    return { rollouts: page.map(toSummary), nextCursor };
  }

  getRollout(traceId: string) {
    return this.read(() => this.getRolloutNow(traceId));
  }

  private getRolloutNow(traceId: string) {
    const r = this.stmt.getRollout.get(traceId);
    if (!r) return undefined;
    const callsList = this.stmt.listCalls.all(traceId).map(toCall);
    return {
      ...toSummary({ ...r, calls: callsList.length }),
      item: r.item ? (JSON.parse(r.item) as Record<string, unknown>) : null,
      callsList,
      grades: this.stmt.listGrades.all(traceId).map(toGrade),
    };
  }

  importRollout(r: ImportedRollout): Promise<'imported' | 'exists'> {
    return this.write(() => this.importTx(r));
  }

  rememberWebhookId(id: string, expiresAt: number, now: number): Promise<boolean> {
    return this.write(() => {
      if (this.stmt.rememberId.run(id, expiresAt).changes === 1) {
        if (Math.random() < 0.01) this.stmt.purgeIds.run(now);
        return true;
      }
      // Present: it is a replay unless the earlier entry has expired.
      return this.stmt.refreshExpiredId.run(expiresAt, id, now).changes === 1;
    });
  }

  markInterrupted(output: string, now: number): Promise<number> {
    return this.write(() => this.stmt.interrupt.run(output, now).changes);
  }

  ping(): Promise<void> {
    return this.write(() => {
      this.stmt.ping.run('__readyz__', 0);
    });
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    if (this.db.inTransaction) this.commit();
    await this.durable;
    await this.checkpointer?.stop();
    this.db.close();
    if (this.walFd !== undefined) closeSync(this.walFd);
  }
}
