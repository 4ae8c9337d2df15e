// SQLite store (better-sqlite3, WAL). Every write is one short transaction, so a call's insert and
// its budget charge commit together and parallel calls of a rollout can never overspend.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { BudgetUsage, CallStatus, GradeRecord, RecordedCall, RolloutSummary } from '../rollouts/types.js';
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
CREATE INDEX IF NOT EXISTS rollouts_updated ON rollouts (updated_at);
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
CREATE INDEX IF NOT EXISTS calls_running ON calls (status) WHERE status = 'running';
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

interface CallRow {
  trace_id: string;
  call_id: string;
  seq: number;
  tool: string;
  arguments: string;
  args_hash: string;
  output: string | null;
  status: string;
  cost: number;
  credential: string | null;
  started_at: number;
  finished_at: number | null;
  duration_ms: number | null;
  output_bytes: number | null;
  truncated: number;
}

interface RolloutRow {
  trace_id: string;
  created_at: number;
  updated_at: number;
  item: string | null;
  budget_limit: number;
  budget_used: number;
  budget_exceeded: number;
  next_seq: number;
  last_score: number | null;
  calls?: number;
}

interface GradeRow {
  id: number;
  trace_id: string;
  grader: string;
  grader_version: string;
  sample_hash: string;
  sample: string;
  status: string;
  score: number | null;
  subscores: string | null;
  explanation: string | null;
  error: string | null;
  credential: string | null;
  source: string;
  created_at: number;
  duration_ms: number;
}

const toCall = (r: CallRow): RecordedCall => ({
  traceId: r.trace_id,
  callId: r.call_id,
  seq: r.seq,
  tool: r.tool,
  arguments: r.arguments,
  argsHash: r.args_hash,
  output: r.output,
  status: r.status as CallStatus,
  cost: r.cost,
  credential: r.credential,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  durationMs: r.duration_ms,
  outputBytes: r.output_bytes,
  truncated: r.truncated === 1,
});

const toGrade = (r: GradeRow): GradeWithSample => ({
  id: r.id,
  traceId: r.trace_id,
  grader: r.grader,
  graderVersion: r.grader_version,
  sampleHash: r.sample_hash,
  sample: JSON.parse(r.sample) as unknown,
  status: r.status as GradeRecord['status'],
  score: r.score,
  subscores: r.subscores ? (JSON.parse(r.subscores) as Record<string, number>) : null,
  explanation: r.explanation,
  error: r.error,
  credential: r.credential,
  source: r.source,
  createdAt: r.created_at,
  durationMs: r.duration_ms,
});

const toSummary = (r: RolloutRow): RolloutSummary => ({
  traceId: r.trace_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  budgetLimit: r.budget_limit,
  budgetUsed: r.budget_used,
  budgetExceeded: r.budget_exceeded === 1,
  calls: r.calls ?? 0,
  lastScore: r.last_score,
});

const budgetOf = (r: Pick<RolloutRow, 'budget_used' | 'budget_limit' | 'budget_exceeded'>): BudgetUsage => ({
  used: r.budget_used,
  limit: r.budget_limit,
  exceeded: r.budget_exceeded === 1,
});

export interface SqliteStoreOptions {
  path: string;
  sync?: 'full' | 'normal';
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  private readonly db: Database.Database;
  private readonly stmt;
  private readonly beginTx;
  private readonly importTx;

  constructor(opts: SqliteStoreOptions) {
    if (opts.path !== ':memory:') mkdirSync(dirname(opts.path), { recursive: true });
    this.db = new Database(opts.path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${opts.sync === 'normal' ? 'NORMAL' : 'FULL'}`);
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    this.db.exec(SCHEMA);
    const db = this.db;
    this.stmt = {
      getRollout: db.prepare<[string], RolloutRow>('SELECT * FROM rollouts WHERE trace_id = ?'),
      insertRollout: db.prepare(
        'INSERT OR IGNORE INTO rollouts (trace_id, created_at, updated_at, item, budget_limit) VALUES (?, ?, ?, ?, ?)',
      ),
      charge: db.prepare(
        'UPDATE rollouts SET budget_used = budget_used + ?, next_seq = next_seq + 1, updated_at = ? WHERE trace_id = ?',
      ),
      refuse: db.prepare('UPDATE rollouts SET budget_exceeded = 1, next_seq = next_seq + 1, updated_at = ? WHERE trace_id = ?'),
      getCall: db.prepare<[string, string], CallRow>('SELECT * FROM calls WHERE trace_id = ? AND call_id = ?'),
      listCalls: db.prepare<[string], CallRow>('SELECT * FROM calls WHERE trace_id = ? ORDER BY seq'),
      insertCall: db.prepare(
        `INSERT INTO calls (trace_id, call_id, seq, tool, arguments, args_hash, output, status, cost, credential, started_at,
           finished_at, duration_ms, output_bytes, truncated)
         VALUES (@trace_id, @call_id, @seq, @tool, @arguments, @args_hash, @output, @status, @cost, @credential, @started_at,
           @finished_at, @duration_ms, @output_bytes, @truncated)`,
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

    this.beginTx = db.transaction((input: BeginCallInput): BeginCallResult => {
      this.stmt.insertRollout.run(
        input.traceId,
        input.now,
        input.now,
        input.item ? JSON.stringify(input.item) : null,
        input.budgetLimit,
      );
      const existing = this.stmt.getCall.get(input.traceId, input.callId);
      if (existing) {
        const call = toCall(existing);
        const same = existing.args_hash === input.argsHash && existing.tool === input.tool;
        return same ? { kind: 'existing', call } : { kind: 'conflict', call };
      }
      const r = this.stmt.getRollout.get(input.traceId)!;
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
        const bytes = Buffer.byteLength(input.overBudgetOutput);
        this.stmt.insertCall.run({
          ...base,
          output: input.overBudgetOutput,
          status: 'budget_exceeded',
          cost: 0,
          finished_at: input.now,
          duration_ms: 0,
          output_bytes: bytes,
          truncated: 0,
        });
        this.stmt.refuse.run(input.now, input.traceId);
        return {
          kind: 'over_budget',
          call: toCall(this.stmt.getCall.get(input.traceId, input.callId)!),
          budget: { used: r.budget_used, limit: r.budget_limit, exceeded: true },
        };
      }
      this.stmt.insertCall.run({
        ...base,
        output: null,
        status: 'running',
        cost: input.cost,
        finished_at: null,
        duration_ms: null,
        output_bytes: null,
        truncated: 0,
      });
      this.stmt.charge.run(input.cost, input.now, input.traceId);
      return {
        kind: 'started',
        call: toCall(this.stmt.getCall.get(input.traceId, input.callId)!),
        budget: { used: r.budget_used + input.cost, limit: r.budget_limit, exceeded: r.budget_exceeded === 1 },
      };
    });

    this.importTx = db.transaction((r: ImportedRollout): 'imported' | 'exists' => {
      if (this.stmt.getRollout.get(r.traceId)) return 'exists';
      this.stmt.insertRollout.run(r.traceId, r.createdAt, r.updatedAt, r.item ? JSON.stringify(r.item) : null, r.budget.limit);
      db.prepare('UPDATE rollouts SET budget_used = ?, budget_exceeded = ?, next_seq = ? WHERE trace_id = ?').run(
        r.budget.used,
        r.budget.exceeded ? 1 : 0,
        r.calls.reduce((m, c) => Math.max(m, c.seq), 0) + 1,
        r.traceId,
      );
      for (const c of r.calls) {
        this.stmt.insertCall.run({
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
    });
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

  async beginCall(input: BeginCallInput): Promise<BeginCallResult> {
    return this.beginTx.immediate(input);
  }

  async finishCall(traceId: string, callId: string, r: FinishCallInput): Promise<void> {
    this.stmt.finishCall.run(r.output, r.status, r.finishedAt, r.durationMs, r.outputBytes, r.truncated ? 1 : 0, traceId, callId);
  }

  async getCall(traceId: string, callId: string): Promise<RecordedCall | undefined> {
    const r = this.stmt.getCall.get(traceId, callId);
    return r ? toCall(r) : undefined;
  }

  async listCalls(traceId: string): Promise<RecordedCall[]> {
    return this.stmt.listCalls.all(traceId).map(toCall);
  }

  async getBudget(traceId: string, defaultLimit: number): Promise<BudgetUsage> {
    const r = this.stmt.getRollout.get(traceId);
    return r ? budgetOf(r) : { used: 0, limit: defaultLimit, exceeded: false };
  }

  async ensureRollout(traceId: string, item: Record<string, unknown> | null, budgetLimit: number, now: number): Promise<void> {
    this.stmt.insertRollout.run(traceId, now, now, item ? JSON.stringify(item) : null, budgetLimit);
  }

  async findGrade(traceId: string, grader: string, version: string, sampleHash: string): Promise<GradeRecord | undefined> {
    const r = this.stmt.findGrade.get(traceId, grader, version, sampleHash);
    return r ? toGrade(r) : undefined;
  }

  async insertGrade(g: NewGrade): Promise<GradeRecord> {
    const id = this.db.transaction(() => {
      const info = this.stmt.insertGrade.run(this.gradeParams(g));
      if (g.status === 'ok') this.stmt.setScore.run(g.score, g.createdAt, g.traceId);
      else this.stmt.touch.run(g.createdAt, g.traceId);
      return Number(info.lastInsertRowid);
    })();
    return toGrade(this.stmt.gradeById.get(id)!);
  }

  async listGrades(traceId: string): Promise<GradeWithSample[]> {
    return this.stmt.listGrades.all(traceId).map(toGrade);
  }

  async listRollouts(q: ListRolloutsQuery): Promise<{ rollouts: RolloutSummary[]; nextCursor: string | null }> {
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

  async getRollout(traceId: string) {
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

  async importRollout(r: ImportedRollout): Promise<'imported' | 'exists'> {
    return this.importTx.immediate(r);
  }

  async rememberWebhookId(id: string, expiresAt: number, now: number): Promise<boolean> {
    if (this.stmt.rememberId.run(id, expiresAt).changes === 1) {
      if (Math.random() < 0.01) this.stmt.purgeIds.run(now);
      return true;
    }
    // Present: it is a replay unless the earlier entry has expired.
    return this.stmt.refreshExpiredId.run(expiresAt, id, now).changes === 1;
  }

  async markInterrupted(output: string, now: number): Promise<number> {
    return this.stmt.interrupt.run(output, now).changes;
  }

  async ping(): Promise<void> {
    this.stmt.ping.run('__readyz__', 0);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
