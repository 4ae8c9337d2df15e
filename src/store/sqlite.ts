// SQLite store (better-sqlite3, WAL), for one server process. Writes go to the writer
// (sqlite-writer.ts: at the end of each event-loop turn by default, or in a thread of its own),
// which commits each turn's writes as one transaction; a call's insert and its
// budget charge are one unit of that transaction, so they land together or not at all. The budget
// decision itself is made here, on the event loop, from an in-memory ledger of recent rollouts
// (loaded from the database on a miss), so parallel calls of a rollout can never overspend.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { errors } from '../errors.js';
import { Checkpointer } from './checkpointer.js';
import { REQUIRE_FAILED, SqliteWriter, type Op, type Unit, type UnitResult, type WriterMode, type WriterStatement } from './sqlite-writer.js';
import { rowMappers, type CallRowShape, type GradeRow, type RolloutRowShape } from './rows.js';
import { dirname } from 'node:path';
import type { BudgetUsage, GradeRecord, RecordedCall, RolloutSummary } from './records.js';
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
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rollouts_created ON rollouts (created_at DESC, trace_id DESC);
-- The dataset row, apart: SQLite rewrites a whole row on UPDATE, and the rollouts row is updated
-- on every call (its budget); rollouts.item only says '{}' (the trainer sent an empty row), so the
-- rollouts row stays small (hence WITHOUT ROWID: one B-tree, not a table and an index). Databases
-- made before this table keep their items in rollouts.item (and their rowid table).
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

/** The rollouts columns a summary needs (never the item: up to 1 MB). */
const SUMMARY_COLUMNS =
  'r.trace_id, r.created_at, r.updated_at, r.budget_limit, r.budget_used, r.budget_exceeded, r.next_seq, r.last_score';
type RolloutRow = RolloutRowShape<number>;

type LedgerRow = Pick<RolloutRow, 'budget_limit' | 'budget_used' | 'budget_exceeded' | 'next_seq'>;

const { toCall, toGrade, toSummary, budgetOf } = rowMappers<number>({ text: (t) => t, bool: (b) => b === 1 });

export interface SqliteStoreOptions {
  path: string;
  sync?: 'full' | 'normal';
  /** Rollouts whose ledger (budget, next seq, call ids) is kept in memory; older ones are reloaded. */
  ledgerCacheSize?: number;
  /** Where commits run: a writer thread, or the event loop at the end of each turn (see sqlite-writer.ts). */
  writer?: WriterMode;
}

/**
 * The writer's statements, by name (positional parameters: binding by name costs on the hot path).
 * Units name them by index (W below), which follows this object's order.
 */
const WRITE_STATEMENTS = {
  // A rollout row if absent (its first call, or a grade for a rollout with no call).
  insertRollout: { sql: 'INSERT OR IGNORE INTO rollouts (trace_id, created_at, updated_at, item, budget_limit) VALUES (?, ?, ?, ?, ?)' },
  charge: { sql: 'UPDATE rollouts SET budget_used = budget_used + ?, next_seq = next_seq + 1, updated_at = ? WHERE trace_id = ?' },
  refuse: { sql: 'UPDATE rollouts SET budget_exceeded = 1, next_seq = next_seq + 1, updated_at = ? WHERE trace_id = ?' },
  insertCall: {
    sql: `INSERT INTO calls (trace_id, call_id, seq, tool, arguments, args_hash, output, status, cost, credential, started_at,
            finished_at, duration_ms, output_bytes, truncated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  },
  finishCall: {
    sql: `UPDATE calls SET output = ?, status = ?, finished_at = ?, duration_ms = ?, output_bytes = ?, truncated = ?
          WHERE trace_id = ? AND call_id = ? AND status = 'running'`,
  },
  // A finish that changed nothing is fine if the call is recorded (already finished or interrupted);
  // a call with no record at all (its start lost with a failed commit) must not be acknowledged.
  requireCall: { sql: 'SELECT 1 FROM calls WHERE trace_id = ? AND call_id = ?', require: true },
  insertGrade: {
    sql: `INSERT INTO grades (trace_id, grader, grader_version, sample_hash, sample, status, score, subscores, explanation, error,
            credential, source, created_at, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  },
  setScore: { sql: 'UPDATE rollouts SET last_score = ?, updated_at = ? WHERE trace_id = ?' },
  touch: { sql: 'UPDATE rollouts SET updated_at = ? WHERE trace_id = ?' },
  // New id, or an expired entry refreshed: one change. A live entry (a replay): none.
  rememberId: {
    sql: `INSERT INTO webhook_ids (id, expires_at) VALUES (?, ?)
          ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at WHERE webhook_ids.expires_at <= ?`,
  },
  purgeIds: { sql: 'DELETE FROM webhook_ids WHERE expires_at <= ?' },
  interrupt: { sql: `UPDATE calls SET status = 'interrupted', output = ?, finished_at = ? WHERE status = 'running'` },
  ping: { sql: 'INSERT OR REPLACE INTO webhook_ids (id, expires_at) VALUES (?, ?)' },
  importRollout: { sql: 'INSERT INTO rollouts (trace_id, created_at, updated_at, item, budget_limit) VALUES (?, ?, ?, ?, ?)' },
  importLedger: { sql: 'UPDATE rollouts SET budget_used = ?, budget_exceeded = ?, next_seq = ? WHERE trace_id = ?' },
  insertItem: { sql: 'INSERT OR IGNORE INTO rollout_items (trace_id, item) VALUES (?, ?)' },
  // Records the item unless the rollout has a non-empty one (here, or in an older database's
  // rollouts.item): params trace, item, item, trace.
  fillItem: {
    sql: `INSERT INTO rollout_items (trace_id, item)
            SELECT ?, ? WHERE ? IS NOT NULL AND NOT EXISTS (
              SELECT 1 FROM rollouts WHERE trace_id = ? AND item IS NOT NULL AND item <> '{}')
          ON CONFLICT (trace_id) DO UPDATE SET item = excluded.item
          WHERE excluded.item <> '{}' AND rollout_items.item = '{}'`,
  },
} satisfies Record<string, WriterStatement>;

const WRITES: WriterStatement[] = Object.values(WRITE_STATEMENTS);
const W = Object.fromEntries(Object.keys(WRITE_STATEMENTS).map((name, i) => [name, i])) as Record<keyof typeof WRITE_STATEMENTS, number>;

/** A rollout's ledger as the writes submitted so far leave it (committed or not yet). */
interface LedgerState {
  limit: number;
  used: number;
  exceeded: boolean;
  nextSeq: number;
  /** Every call id of the rollout, with what recognises a retry as the same call. */
  calls: Map<string, { tool: string; argsHash: string }>;
}

/** Where a dataset row goes: an empty one inline in the rollouts row ('{}'), any other in rollout_items. */
function itemColumns(item: Record<string, unknown> | null): { inline: '{}' | null; apart: string | null } {
  if (!item) return { inline: null, apart: null };
  const text = JSON.stringify(item);
  return text === '{}' ? { inline: '{}', apart: null } : { inline: null, apart: text };
}

const gradeParams = (traceId: string, g: Omit<NewGrade, 'traceId'>): unknown[] => [
  traceId, g.grader, g.graderVersion, g.sampleHash, JSON.stringify(g.sample ?? null), g.status, g.score,
  g.subscores ? JSON.stringify(g.subscores) : null, g.explanation, g.error, g.credential, g.source, g.createdAt, g.durationMs,
];

const callParams = (c: RecordedCall): unknown[] => [
  c.traceId, c.callId, c.seq, c.tool, c.arguments, c.argsHash, c.output, c.status, c.cost, c.credential, c.startedAt,
  c.finishedAt, c.durationMs, c.outputBytes, c.truncated ? 1 : 0,
];

/**
 * Durability: no write's promise resolves before the writer has committed it (and, with sync
 * 'full', fdatasync'ed the WAL), so "acknowledged" means "on disk". Reads use this thread's own
 * connection and first wait until every write submitted before them is answered, so a read sees
 * everything written before it. Checkpoints run in another thread (checkpointer.ts), and so do the
 * inline writer's fsyncs (wal-syncer.ts).
 *
 * The in-memory ledger is exact because this process is the database's only writer: a rollout's
 * state is loaded from the database only while none of its writes is outstanding, and dropped
 * (to be reloaded) after any of its writes fails.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  private readonly db: Database.Database;
  private readonly writer: SqliteWriter;
  private readonly checkpointer: Checkpointer;
  private readonly stmt;
  private readonly ledgers = new Map<string, LedgerState>();
  /** Writes submitted and not yet answered, per rollout. */
  private readonly pending = new Map<string, number>();
  /** Rollouts with a refused write among the outstanding ones. */
  private readonly failed = new Set<string>();
  private readonly idleWaiters = new Map<string, (() => void)[]>();
  private readonly cacheSize: number;
  /** Held for the store's life: the in-memory ledger is exact only with one writer process. */
  private readonly lock: Database.Database;

  constructor(opts: SqliteStoreOptions) {
    if (opts.path === ':memory:') throw new Error('the SQLite store needs a file (its checkpointer and lock open it too)');
    mkdirSync(dirname(opts.path), { recursive: true });
    this.cacheSize = opts.ledgerCacheSize ?? 4096;
    this.lock = takeLock(`${opts.path}.lock`, opts.path);
    this.db = new Database(opts.path);
    // The writer's engine sets what commits need (synchronous, checkpoints, cache) on the
    // connection it writes with: this one when inline, its own in the thread.
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
    this.writer = new SqliteWriter(opts.path, WRITES, opts.sync !== 'normal', opts.writer ?? 'inline', this.db);
    this.writer.onSettled = (traceId, failed) => this.settled(traceId, failed);
    this.checkpointer = new Checkpointer(opts.path, { pauseWriter: (paused) => this.writer.pause(paused) });
    const db = this.db;
    this.stmt = {
      getRollout: db.prepare<[string], RolloutRow>(
        `SELECT ${SUMMARY_COLUMNS}, coalesce(i.item, r.item) AS item FROM rollouts r
         LEFT JOIN rollout_items i ON i.trace_id = r.trace_id WHERE r.trace_id = ?`,
      ),
      // Only the ledger columns, never the row (item, up to 1 MB).
      getLedger: db.prepare<[string], LedgerRow>(
        'SELECT budget_limit, budget_used, budget_exceeded, next_seq FROM rollouts WHERE trace_id = ?',
      ),
      ledgerCalls: db.prepare<[string], { call_id: string; tool: string; args_hash: string }>(
        'SELECT call_id, tool, args_hash FROM calls WHERE trace_id = ?',
      ),
      getCall: db.prepare<[string, string], CallRow>('SELECT * FROM calls WHERE trace_id = ? AND call_id = ?'),
      listCalls: db.prepare<[string], CallRow>('SELECT * FROM calls WHERE trace_id = ? ORDER BY seq'),
      findGrade: db.prepare<[string, string, string, string], GradeRow>(
        `SELECT * FROM grades WHERE trace_id = ? AND grader = ? AND grader_version = ? AND sample_hash = ? AND status = 'ok'
         ORDER BY id DESC LIMIT 1`,
      ),
      listGrades: db.prepare<[string], GradeRow>('SELECT * FROM grades WHERE trace_id = ? ORDER BY id'),
      gradeById: db.prepare<[number], GradeRow>('SELECT * FROM grades WHERE id = ?'),
    };
  }

  // ---- writes ------------------------------------------------------------------------------

  /** Settles when the rollout has no outstanding write (at once if it has none). */
  private whenIdle(traceId: string): Promise<void> {
    if (!this.pending.has(traceId)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const list = this.idleWaiters.get(traceId);
      if (list) list.push(resolve);
      else this.idleWaiters.set(traceId, [resolve]);
    });
  }

  /** A rollout's write was answered: count it down; a refused one drops its in-memory ledger. */
  private settled(traceId: string, failed: boolean): void {
    if (failed) this.failed.add(traceId);
    const n = (this.pending.get(traceId) ?? 1) - 1;
    if (n > 0) {
      this.pending.set(traceId, n);
      return;
    }
    this.pending.delete(traceId);
    // A refused write may have left the in-memory ledger ahead of the database: reload it.
    if (this.failed.delete(traceId)) this.ledgers.delete(traceId);
    const waiters = this.idleWaiters.get(traceId);
    if (waiters) {
      this.idleWaiters.delete(traceId);
      for (const w of waiters) w();
    }
  }

  /**
   * Submits a unit; one for a rollout (traceId) is counted as outstanding for it until answered.
   * Resolves to `value` if given, else to the unit's result.
   */
  private submit<T = UnitResult>(traceId: string | undefined, unit: Unit, early = false, value?: T): Promise<T> {
    if (traceId !== undefined) this.pending.set(traceId, (this.pending.get(traceId) ?? 0) + 1);
    return this.writer.submit<T>(unit, { early, tag: traceId, value });
  }

  beginCall(input: BeginCallInput): Promise<BeginCallResult> {
    const { traceId } = input;
    let st = this.ledgers.get(traceId);
    if (this.failed.has(traceId)) {
      // A write of this rollout was refused: decide from the database once the others are answered.
      return this.whenIdle(traceId).then(() => this.beginCall(input));
    }
    const ops: Unit = [];
    if (st) {
      // Most recently used last: eviction takes the oldest first.
      this.ledgers.delete(traceId);
      this.ledgers.set(traceId, st);
    } else {
      if (this.pending.has(traceId)) return this.whenIdle(traceId).then(() => this.beginCall(input));
      let loaded: LedgerState | undefined;
      try {
        loaded = this.loadLedger(traceId);
      } catch (e) {
        return Promise.reject(e as Error);
      }
      if (!loaded) {
        // The row (up to 1 MB) is serialized once, when its rollout starts.
        const item = itemColumns(input.item);
        ops.push([W.insertRollout, [traceId, input.now, input.now, item.inline, input.budgetLimit]]);
        if (item.apart !== null) ops.push([W.insertItem, [traceId, item.apart]]);
        loaded = { limit: input.budgetLimit, used: 0, exceeded: false, nextSeq: 1, calls: new Map() };
      }
      st = loaded;
      this.ledgers.set(traceId, st);
      this.evict();
    }

    const known = st.calls.get(input.callId);
    if (known) {
      const same = known.argsHash === input.argsHash && known.tool === input.tool;
      return this.readAfterWrites(() => {
        const row = this.stmt.getCall.get(traceId, input.callId);
        if (!row) throw new Error(`call ${input.callId} of ${traceId} is not recorded`);
        const call = toCall(row);
        return same ? { kind: 'existing', call } : { kind: 'conflict', call };
      });
    }

    const seq = st.nextSeq++;
    st.calls.set(input.callId, { tool: input.tool, argsHash: input.argsHash });
    const over = st.used + input.cost > st.limit;
    const call: RecordedCall = {
      traceId,
      callId: input.callId,
      seq,
      tool: input.tool,
      arguments: input.arguments,
      argsHash: input.argsHash,
      output: over ? input.overBudgetOutput : null,
      status: over ? 'budget_exceeded' : 'running',
      cost: over ? 0 : input.cost,
      credential: input.credential,
      startedAt: input.now,
      finishedAt: over ? input.now : null,
      durationMs: over ? 0 : null,
      outputBytes: over ? Buffer.byteLength(input.overBudgetOutput) : null,
      truncated: false,
    };
    ops.push([W.insertCall, callParams(call)]);
    let result: BeginCallResult;
    if (over) {
      ops.push([W.refuse, [input.now, traceId]]);
      result = { kind: 'over_budget', call, budget: { used: st.used, limit: st.limit, exceeded: true } };
      st.exceeded = true;
    } else {
      ops.push([W.charge, [input.cost, input.now, traceId]]);
      st.used += input.cost;
      result = { kind: 'started', call, budget: { used: st.used, limit: st.limit, exceeded: st.exceeded } };
    }
    // A start is answered once committed (it survives a crash of this process: after a restart it
    // is `interrupted`, never run again); its fsync comes with the result's. A refusal is a result.
    const written = this.submit(traceId, ops, result.kind === 'started', result);
    if (input.durable === false && result.kind === 'started') {
      // Answered now; a lost start makes the finish fail (see requireCall). A refusal is a reply:
      // it waits for its write like any other.
      written.catch(() => undefined);
      return Promise.resolve(result);
    }
    return written;
  }

  /** The rollout's ledger from the database (only called while none of its writes is outstanding). */
  private loadLedger(traceId: string): LedgerState | undefined {
    const r = this.stmt.getLedger.get(traceId);
    if (!r) return undefined;
    const calls = new Map<string, { tool: string; argsHash: string }>();
    for (const c of this.stmt.ledgerCalls.all(traceId)) calls.set(c.call_id, { tool: c.tool, argsHash: c.args_hash });
    return { limit: r.budget_limit, used: r.budget_used, exceeded: r.budget_exceeded === 1, nextSeq: r.next_seq, calls };
  }

  private evict(): void {
    if (this.ledgers.size <= this.cacheSize) return;
    let scanned = 0;
    for (const traceId of this.ledgers.keys()) {
      if (this.ledgers.size <= this.cacheSize || scanned++ > 64) break;
      // An entry with outstanding writes is ahead of the database: it cannot be reloaded yet.
      if (!this.pending.has(traceId)) this.ledgers.delete(traceId);
    }
  }

  async finishCall(traceId: string, callId: string, r: FinishCallInput): Promise<void> {
    try {
      await this.submit(
        traceId,
        [
          [W.finishCall, [r.output, r.status, r.finishedAt, r.durationMs, r.outputBytes, r.truncated ? 1 : 0, traceId, callId]],
          [W.requireCall, [traceId, callId]],
        ],
      );
    } catch (e) {
      if ((e as Error).message === REQUIRE_FAILED) throw new Error(`call ${callId} of ${traceId} is not recorded as running`);
      throw e;
    }
  }

  async ensureRollout(traceId: string, item: Record<string, unknown> | null, budgetLimit: number, now: number): Promise<void> {
    const { inline, apart } = itemColumns(item);
    const ops: Unit = [[W.insertRollout, [traceId, now, now, inline, budgetLimit]]];
    if (apart !== null) ops.push([W.fillItem, [traceId, apart, apart, traceId]]);
    await this.submit(traceId, ops);
  }

  async insertGrade(g: NewGrade): Promise<GradeRecord> {
    const ops: Unit = [
      [W.insertGrade, gradeParams(g.traceId, g)],
      g.status === 'ok' ? [W.setScore, [g.score, g.createdAt, g.traceId]] : [W.touch, [g.createdAt, g.traceId]],
    ];
    const [, id] = await this.submit(g.traceId, ops);
    return toGrade(this.stmt.gradeById.get(id)!);
  }

  async importRollout(r: ImportedRollout): Promise<'imported' | 'exists'> {
    await this.writer.settled();
    if (this.ledgers.has(r.traceId) || this.pending.has(r.traceId) || this.stmt.getLedger.get(r.traceId)) return 'exists';
    const item = itemColumns(r.item);
    const ops: Unit = [
      [W.importRollout, [r.traceId, r.createdAt, r.updatedAt, item.inline, r.budget.limit]],
      ...(item.apart !== null ? [[W.insertItem, [r.traceId, item.apart]] as Op] : []),
      [W.importLedger, [r.budget.used, r.budget.exceeded ? 1 : 0, r.calls.reduce((m, c) => Math.max(m, c.seq), 0) + 1, r.traceId]],
    ];
    for (const c of r.calls) {
      ops.push([W.insertCall, callParams({ ...c, traceId: r.traceId })]);
    }
    let last: number | null = null;
    for (const g of r.grades) {
      ops.push([W.insertGrade, gradeParams(r.traceId, g)]);
      if (g.status === 'ok') last = g.score;
    }
    if (last !== null) ops.push([W.setScore, [last, r.updatedAt, r.traceId]]);
    try {
      await this.submit(r.traceId, ops);
    } catch (e) {
      // Two imports of one rollout at once: the second finds the row the first wrote.
      if (/SQLITE_CONSTRAINT/.test((e as Error).message) && this.stmt.getLedger.get(r.traceId)) return 'exists';
      throw e;
    }
    return 'imported';
  }

  async rememberWebhookId(id: string, expiresAt: number, now: number): Promise<boolean> {
    const ops: Unit = [[W.rememberId, [id, expiresAt, now]]];
    if (Math.random() < 0.01) ops.push([W.purgeIds, [now]]);
    const [changes] = await this.submit(undefined, ops);
    return changes === 1;
  }

  async markInterrupted(output: string, now: number): Promise<number> {
    const [changes] = await this.submit(undefined, [[W.interrupt, [output, now]]]);
    return changes;
  }

  async ping(): Promise<void> {
    await this.submit(undefined, [[W.ping, ['__readyz__', 0]]]);
  }

  // ---- reads -------------------------------------------------------------------------------

  /** Runs a read once every write submitted before it is answered: a read sees what was written. */
  private readAfterWrites<T>(fn: () => T): Promise<T> {
    return this.writer.settled().then(fn);
  }

  getCall(traceId: string, callId: string): Promise<RecordedCall | undefined> {
    return this.readAfterWrites(() => {
      const r = this.stmt.getCall.get(traceId, callId);
      return r ? toCall(r) : undefined;
    });
  }

  listCalls(traceId: string): Promise<RecordedCall[]> {
    return this.readAfterWrites(() => this.stmt.listCalls.all(traceId).map(toCall));
  }

  getBudget(traceId: string, defaultLimit: number): Promise<BudgetUsage> {
    return this.readAfterWrites(() => {
      const r = this.stmt.getLedger.get(traceId);
      return r ? budgetOf(r) : { used: 0, limit: defaultLimit, exceeded: false };
    });
  }

  findGrade(traceId: string, grader: string, version: string, sampleHash: string): Promise<GradeRecord | undefined> {
    return this.readAfterWrites(() => {
      const r = this.stmt.findGrade.get(traceId, grader, version, sampleHash);
      return r ? toGrade(r) : undefined;
    });
  }

  listGrades(traceId: string): Promise<GradeWithSample[]> {
    return this.readAfterWrites(() => this.stmt.listGrades.all(traceId).map(toGrade));
  }

  listRollouts(q: ListRolloutsQuery): Promise<{ rollouts: RolloutSummary[]; nextCursor: string | null }> {
    return this.readAfterWrites(() => this.listRolloutsNow(q));
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
        `SELECT ${SUMMARY_COLUMNS}, (SELECT count(*) FROM calls c WHERE c.trace_id = r.trace_id) AS calls FROM rollouts r
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
    return this.readAfterWrites(() => this.getRolloutNow(traceId));
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

  async close(): Promise<void> {
    if (!this.db.open) return;
    await this.writer.close();
    await this.checkpointer.stop();
    this.db.close();
    this.lock.close();
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
    if ((e as { code?: string }).code === 'SQLITE_BUSY') throw errors.storeInUse(storePath);
    throw e;
  }
}
