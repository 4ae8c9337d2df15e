// Postgres store, for several replicas behind a load balancer sharing one database. Every guarantee
// of the SQLite store holds across processes: a call's admission (rollout insert, replay check,
// budget charge, seq) is one transaction under a row lock on its rollout (begin_call() in
// pg-schema.ts), webhook ids are claimed with one atomic upsert, and a booting replica interrupts
// only the calls it started itself (calls.owner).
import pg from 'pg';
import type { Logger } from 'pino';
import { errors } from '../errors.js';
import { redactUrl } from '../config.js';
import type { BudgetUsage, GradeRecord, RecordedCall, RolloutSummary } from './records.js';
import { DEFAULT_DOOR, GRADE_COLUMNS, gradeValues, rowMappers, toDoorSession, type CallRowShape, type DoorSessionRow, type GradeRow, type RolloutRowShape } from './rows.js';
import { ensureSchema, quoteIdent } from './pg-schema.js';
import { closeRunningSql } from './pg-interrupt.js';
import { ensureReplicaSchema, PgReplicas } from './pg-replicas.js';
import type { Replicas } from './replicas.js';
import { KeyedBatcher } from './keyed-batcher.js';
import { isTransient, retryOnce } from './pg-retry.js';
import { decodeText, encodeNullable, encodeText } from './pg-text.js';
import {
  postgresDialect,
  listRolloutsSql,
  rolloutPage,
  statsSql,
  STATS_PARTS,
  toFlag,
  flagUpsert,
  upsertFlagSql,
  type Dialect,
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
  InsertedGrade,
  GradeWithSample,
  ImportedRollout,
  ListRolloutsQuery,
  NewDoorSession,
  NewGrade,
  RolloutTally,
  SessionChange,
  Store,
  StoredDoorSession,
  WriteDurability,
} from './types.js';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:5432/db */
  url: string;
  /** Schema holding the tables, created at first connect (tests use a random one). */
  schema?: string;
  /** Connections per replica; each in-flight store operation holds one for a round trip or two. */
  poolSize?: number;
  /** This replica's id, stable across its restarts: recorded on each call it starts. */
  instanceId: string;
  /**
   * At boot, running calls of ANY replica older than this are interrupted too: their replica is
   * gone (no tool call outlives its timeout, at most 10 minutes), and nobody else would close them.
   */
  orphanAfterMs?: number;
  /** Errors of idle pooled connections (the database restarted ...); unhandled they would crash. */
  onIdleError?: (e: Error) => void;
  log?: Logger;
}

// Rows as Postgres returns them: int8 parsed to number, booleans as booleans, free text NUL-encoded.
interface PgCallRow extends CallRowShape<boolean> {
  owner: string | null;
}
type PgRolloutRow = RolloutRowShape<boolean>;
type PgGradeRow = GradeRow;
const { toCall, toGrade, toSummary, budgetOf } = rowMappers<boolean>({ text: decodeText, bool: (b) => b });

const INT8_OID = 20;
const DEFAULT_ORPHAN_AFTER_MS = 60 * 60_000;
const KNOWN_ROLLOUTS_MAX = 100_000;

interface BeginRow {
  kind: BeginCallResult['kind'];
  call: PgCallRow;
  used?: number;
  limit?: number;
  exceeded?: boolean;
}

export class PostgresStore implements Store {
  readonly kind = 'postgres';
  /**
   * Rollouts this replica has seen exist. Their row (up to 1 MB, sent with every call) is then not
   * serialized and shipped again: rollouts are never deleted, so it could only be ignored.
   */
  private readonly knownRollouts = new Set<string>();
  /** The schema's quoted name. */
  private readonly schema: string;
  private readonly t: { rollouts: string; calls: string; grades: string; webhookIds: string; beginCall: string; beginCalls: string };
  /** Calls of one rollout that arrive while its previous admission commits go in one transaction. */
  private readonly dialect: Dialect;
  private readonly admissions = new KeyedBatcher<BeginCallInput, BeginCallResult>((key, inputs) => this.admit(key, inputs));

  private constructor(
    private readonly pool: pg.Pool,
    schema: string,
    private readonly instanceId: string,
    private readonly orphanAfterMs: number,
    /** Placements of sandboxes and the order of serial calls across replicas (pg-replicas.ts). */
    readonly replicas: Replicas & { close(): Promise<void> },
  ) {
    const s = quoteIdent(schema);
    this.schema = s;
    this.dialect = postgresDialect(s);
    this.t = {
      rollouts: `${s}.rollouts`,
      calls: `${s}.calls`,
      grades: `${s}.grades`,
      webhookIds: `${s}.webhook_ids`,
      beginCall: `${s}.begin_call`,
      beginCalls: `${s}.begin_calls`,
    };
  }

  /** Connects, creates the schema if absent, and returns the store; a coded error if it cannot. */
  static async open(opts: PostgresStoreOptions): Promise<PostgresStore> {
    const schema = opts.schema ?? 'rft';
    quoteIdent(schema);
    const pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolSize ?? 10,
      connectionTimeoutMillis: 10_000,
      idleTimeoutMillis: 30_000,
      // Idle connections alone do not keep the process alive (a CLI, or a boot that failed later).
      allowExitOnIdle: true,
      // A stuck statement or lock wait becomes an error (503, the trainer retries) instead of a hang.
      statement_timeout: 60_000,
      idle_in_transaction_session_timeout: 60_000,
      application_name: `rft-endpoints ${opts.instanceId}`.slice(0, 63),
      // Times are bigint ms since epoch: numbers, not the strings pg returns for int8 by default.
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
      },
    });
    pool.on('error', (e) => opts.onIdleError?.(e));
    try {
      const client = await pool.connect();
      try {
        await ensureSchema(client, schema);
        await ensureReplicaSchema(client, schema);
      } finally {
        client.release();
      }
    } catch (e) {
      await pool.end().catch(() => undefined);
      throw errors.storeConnect(`${redactUrl(opts.url)} (schema ${schema})`, (e as Error).message);
    }
    let replicas: PgReplicas;
    try {
      replicas = await PgReplicas.start(pool, schema, { connectionString: opts.url }, opts.instanceId, opts.log);
    } catch (e) {
      await pool.end().catch(() => undefined);
      throw e;
    }
    return new PostgresStore(pool, schema, opts.instanceId, opts.orphanAfterMs ?? DEFAULT_ORPHAN_AFTER_MS, replicas);
  }

  private async rows<R extends pg.QueryResultRow>(text: string, values: unknown[] = [], name?: string): Promise<R[]> {
    const res = await this.pool.query<R>(name ? { name, text, values } : { text, values });
    return res.rows;
  }

  /** rows() for statements that are safe to repeat (reads, and writes that a repeat leaves as they are). */
  private idempotent<R extends pg.QueryResultRow>(text: string, values: unknown[] = [], name?: string): Promise<R[]> {
    return retryOnce(() => this.rows<R>(text, values, name));
  }

  /** Runs fn in one transaction on one connection. */
  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const value = await fn(client);
      await client.query('COMMIT');
      return value;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }

  beginCall(input: BeginCallInput): Promise<BeginCallResult> {
    return this.admissions.run(input.traceId, input);
  }

  /**
   * Admits calls of one rollout, in order, in one transaction. If the reply is lost (the connection
   * broke, possibly after the commit), the admission is sent again: a call found running, started by
   * this replica at this very attempt's time, was admitted by the lost attempt and is still ours to
   * run. Without that, its call id would stay "running" for good and every retry would wait on it.
   */
  private async admit(traceId: string, inputs: BeginCallInput[]): Promise<BeginCallResult[]> {
    let rows: BeginRow[];
    let retried = false;
    try {
      rows = await this.admitOnce(traceId, inputs);
    } catch (e) {
      if (!isTransient(e)) throw e;
      rows = await this.admitOnce(traceId, inputs);
      retried = true;
    }
    this.remember(traceId);
    const reclaimed = new Set<string>();
    return rows.map((r, i): BeginCallResult => {
      const call = toCall(r.call);
      const input = inputs[i]!;
      const ours =
        retried &&
        r.kind === 'existing' &&
        r.call.status === 'running' &&
        r.call.owner === this.instanceId &&
        r.call.started_at === input.now &&
        !reclaimed.has(input.callId);
      if (ours) {
        reclaimed.add(input.callId);
        return { kind: 'started', call, budget: { used: r.used!, limit: r.limit!, exceeded: r.exceeded! } };
      }
      if (r.kind === 'existing' || r.kind === 'conflict') return { kind: r.kind, call };
      return { kind: r.kind, call, budget: { used: r.used!, limit: r.limit!, exceeded: r.exceeded! } };
    });
  }

  /** One round trip: begin_call for one call, begin_calls for several. */
  private async admitOnce(traceId: string, inputs: BeginCallInput[]): Promise<BeginRow[]> {
    const first = inputs[0]!;
    const item = first.item && !this.knownRollouts.has(traceId) ? JSON.stringify(first.item) : null;
    if (inputs.length === 1) {
      const [row] = await this.rows<{ r: BeginRow }>(
        `SELECT ${this.t.beginCall}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) AS r`,
        [
          encodeText(traceId),
          encodeText(first.callId),
          first.tool,
          encodeText(first.arguments),
          first.argsHash,
          first.cost,
          first.budgetLimit,
          item,
          encodeNullable(first.credential),
          first.now,
          encodeText(first.overBudgetOutput),
          Buffer.byteLength(first.overBudgetOutput),
          this.instanceId,
        ],
        'rft_begin_call',
      );
      return [row!.r];
    }
    const calls = inputs.map((i) => ({
      call_id: encodeText(i.callId),
      tool: i.tool,
      arguments: encodeText(i.arguments),
      args_hash: i.argsHash,
      cost: i.cost,
      limit: i.budgetLimit,
      credential: encodeNullable(i.credential),
      now: i.now,
      over: encodeText(i.overBudgetOutput),
      over_bytes: Buffer.byteLength(i.overBudgetOutput),
    }));
    const [row] = await this.rows<{ r: BeginRow[] }>(
      `SELECT ${this.t.beginCalls}($1, $2, $3, $4) AS r`,
      [encodeText(traceId), item, this.instanceId, JSON.stringify(calls)],
      'rft_begin_calls',
    );
    return row!.r;
  }

  private remember(traceId: string): void {
    if (this.knownRollouts.size >= KNOWN_ROLLOUTS_MAX) this.knownRollouts.clear();
    this.knownRollouts.add(traceId);
  }

  async unbeginCall(traceId: string, callId: string, seq: number, now: number): Promise<boolean> {
    // The rollout row is locked first, as begin_call does (no lock-order deadlock with an admission);
    // a repeat after a lost reply finds no row (seq is never reused) and changes nothing.
    const rows = await this.idempotent<{ done: number }>(
      `WITH r AS (SELECT trace_id FROM ${this.t.rollouts} WHERE trace_id = $1 FOR UPDATE),
       d AS (DELETE FROM ${this.t.calls} c USING r WHERE c.trace_id = r.trace_id AND c.call_id = $2 AND c.seq = $3 AND c.status = 'running'
             RETURNING c.cost)
       UPDATE ${this.t.rollouts} SET budget_used = budget_used - d.cost, call_count = call_count - 1, updated_at = $4 FROM d WHERE trace_id = $1 RETURNING 1 AS done`,
      [encodeText(traceId), encodeText(callId), seq, now],
      'rft_unbegin_call',
    );
    return rows.length === 1;
  }

  async finishCall(traceId: string, callId: string, r: FinishCallInput): Promise<void> {
    await this.idempotent(
      `UPDATE ${this.t.calls} SET output = $1, status = $2, finished_at = $3, duration_ms = $4, output_bytes = $5, truncated = $6, sandbox = $9
       WHERE trace_id = $7 AND call_id = $8 AND status = 'running'`,
      [encodeText(r.output), r.status, r.finishedAt, r.durationMs, r.outputBytes, r.truncated, encodeText(traceId), encodeText(callId), encodeNullable(r.sandbox ?? null)],
      'rft_finish_call',
    );
  }

  async getCall(traceId: string, callId: string): Promise<RecordedCall | undefined> {
    const [r] = await this.idempotent<PgCallRow>(
      `SELECT * FROM ${this.t.calls} WHERE trace_id = $1 AND call_id = $2`,
      [encodeText(traceId), encodeText(callId)],
      'rft_get_call',
    );
    return r ? toCall(r) : undefined;
  }

  async listCalls(traceId: string): Promise<RecordedCall[]> {
    const rows = await this.idempotent<PgCallRow>(`SELECT * FROM ${this.t.calls} WHERE trace_id = $1 ORDER BY seq`, [encodeText(traceId)]);
    return rows.map(toCall);
  }

  async getBudget(traceId: string, defaultLimit: number): Promise<BudgetUsage> {
    const [r] = await this.idempotent<PgRolloutRow>(
      `SELECT budget_used, budget_limit, budget_exceeded FROM ${this.t.rollouts} WHERE trace_id = $1`,
      [encodeText(traceId)],
    );
    return r ? budgetOf(r) : { used: 0, limit: defaultLimit, exceeded: false };
  }

  async ensureRollout(traceId: string, item: Record<string, unknown> | null, budgetLimit: number, now: number): Promise<void> {
    const row = item && Object.keys(item).length > 0 ? JSON.stringify(item) : null;
    if (this.knownRollouts.has(traceId) && row === null) return;
    // See Store.ensureRollout: a non-empty row fills a rollout whose tool calls carried none.
    await this.idempotent(
      `INSERT INTO ${this.t.rollouts} AS r (trace_id, created_at, updated_at, item, budget_limit) VALUES ($1, $2, $2, $3, $4)
       ON CONFLICT (trace_id) DO UPDATE SET item = EXCLUDED.item
       WHERE EXCLUDED.item IS NOT NULL AND (r.item IS NULL OR r.item = '{}')`,
      [encodeText(traceId), now, row ?? (item ? JSON.stringify(item) : null), budgetLimit],
    );
    this.remember(traceId);
  }

  async openRollout(traceId: string, door: string, item: Record<string, unknown> | null, budgetLimit: number, now: number, run?: string): Promise<void> {
    // As ensureRollout, and the door (and run label, if it has none) set, in one statement.
    await this.idempotent(
      `INSERT INTO ${this.t.rollouts} AS r (trace_id, created_at, updated_at, item, budget_limit, door, run) VALUES ($1, $2, $2, $3, $4, $5, $6)
       ON CONFLICT (trace_id) DO UPDATE SET door = EXCLUDED.door, run = coalesce(r.run, EXCLUDED.run),
         item = CASE WHEN EXCLUDED.item IS NOT NULL AND EXCLUDED.item <> '{}' AND (r.item IS NULL OR r.item = '{}') THEN EXCLUDED.item ELSE r.item END`,
      [encodeText(traceId), now, item ? JSON.stringify(item) : null, budgetLimit, door, run ?? null],
    );
    this.remember(traceId);
  }

  async labelRollout(traceId: string, run: string): Promise<void> {
    await this.idempotent(`UPDATE ${this.t.rollouts} SET run = $2 WHERE trace_id = $1 AND run IS NULL`, [encodeText(traceId), run], 'rft_label_rollout');
  }

  async findGrade(traceId: string, grader: string, version: string, sampleHash: string): Promise<GradeRecord | undefined> {
    const [r] = await this.idempotent<PgGradeRow>(
      `SELECT * FROM ${this.t.grades} WHERE trace_id = $1 AND grader = $2 AND grader_version = $3 AND sample_hash = $4 AND status = 'ok'
       ORDER BY id DESC LIMIT 1`,
      [encodeText(traceId), grader, version, sampleHash],
    );
    return r ? toGrade(r) : undefined;
  }

  async insertGrade(g: NewGrade, rollout?: GradedRollout): Promise<InsertedGrade> {
    // One statement, so the grade, the rollout's last score and (if given) the rollout and its flag
    // commit together; it returns the rollout's tally.
    const values = gradeValues(g, encodeText);
    const score = `last_score = CASE WHEN $6 = 'ok' THEN $7 ELSE r.last_score END, updated_at = $13`;
    let upsert = `UPDATE ${this.t.rollouts} r SET ${score} WHERE trace_id = $1`;
    if (rollout) {
      // As ensureRollout: created if absent; a non-empty dataset row fills an empty one.
      // The run label (if any) is the rollout's unless it has one.
      // The door is set on creation only: an existing rollout keeps its own.
      values.push(rollout.now, rollout.item ? JSON.stringify(rollout.item) : null, rollout.budgetLimit, rollout.run ?? null, rollout.door ?? DEFAULT_DOOR);
      upsert = `INSERT INTO ${this.t.rollouts} AS r (trace_id, created_at, updated_at, item, budget_limit, last_score, run, door)
        VALUES ($1, $15, $13, $16, $17, CASE WHEN $6 = 'ok' THEN $7 END, $18, $19)
        ON CONFLICT (trace_id) DO UPDATE SET ${score}, run = coalesce(r.run, EXCLUDED.run),
          item = CASE WHEN EXCLUDED.item <> '{}' AND (r.item IS NULL OR r.item = '{}') THEN EXCLUDED.item ELSE r.item END`;
    }
    upsert += ' RETURNING r.call_count::int AS calls, r.budget_exceeded';
    let flag = '';
    const f = rollout?.flagIfNoCalls;
    if (f) {
      // As addFlag, if the rollout has no recorded call.
      const n = values.push(f.kind, f.callId === null ? null : encodeText(f.callId), encodeText(f.detail), f.at);
      flag = `, f AS (${flagUpsert(this.dialect, `SELECT $1, $${n - 3}, 1, $${n - 2}, $${n - 1}, $${n}, $${n} FROM u WHERE u.calls = 0`)})`;
    }
    // A 'committed' grade (WriteDurability): this statement's own transaction commits without waiting for
    // the WAL flush (SET LOCAL synchronous_commit = off, as set_config(..., true) in the statement itself).
    const committed = rollout?.durability === 'committed';
    const [r] = await this.rows<PgGradeRow & { tally_calls: number | null; tally_exceeded: boolean | null }>(
      `WITH g AS (
         INSERT INTO ${this.t.grades} (${GRADE_COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING *
       ), u AS (${upsert})${flag}
       SELECT g.*, u.calls AS tally_calls, u.budget_exceeded AS tally_exceeded${committed ? `, set_config('synchronous_commit', 'off', true) AS sync` : ''}
       FROM g LEFT JOIN u ON true`,
      values,
      `rft_insert_grade${rollout ? '_rollout' : ''}${f ? '_flag' : ''}${committed ? '_committed' : ''}`,
    );
    const { tally_calls: calls, tally_exceeded: exceeded, sync: _sync, ...row } = r! as typeof r & { sync?: string };
    const tally = calls === null ? undefined : { calls, budgetExceeded: exceeded === true };
    return { record: toGrade(row), tally };
  }

  async listGrades(traceId: string): Promise<GradeWithSample[]> {
    const rows = await this.idempotent<PgGradeRow>(`SELECT * FROM ${this.t.grades} WHERE trace_id = $1 ORDER BY id`, [encodeText(traceId)]);
    return rows.map(toGrade);
  }

  async listRollouts(q: ListRolloutsQuery): Promise<{ rollouts: RolloutSummary[]; nextCursor: string | null }> {
    const sql = listRolloutsSql(this.dialect, q, encodeText);
    if (!sql) return { rollouts: [], nextCursor: null };
    return rolloutPage(await this.idempotent<PgRolloutRow>(sql.text, sql.params), q.limit, toSummary, decodeText);
  }

  async getRollout(traceId: string) {
    // One statement, so the rollout, its calls and its grades come from one snapshot.
    const [r] = await this.idempotent<PgRolloutRow & { calls_list: PgCallRow[]; grades_list: PgGradeRow[]; flags_list: FlagRow[] }>(
      `SELECT r.*,
         (SELECT coalesce(json_agg(c ORDER BY c.seq), '[]') FROM ${this.t.calls} c WHERE c.trace_id = r.trace_id) AS calls_list,
         (SELECT coalesce(json_agg(g ORDER BY g.id), '[]') FROM ${this.t.grades} g WHERE g.trace_id = r.trace_id) AS grades_list,
         (SELECT coalesce(json_agg(f ORDER BY f.created_at, f.kind), '[]') FROM ${this.dialect.t.flags} f WHERE f.trace_id = r.trace_id) AS flags_list
       FROM ${this.t.rollouts} r WHERE r.trace_id = $1`,
      [encodeText(traceId)],
    );
    if (!r) return undefined;
    const callsList = r.calls_list.map(toCall);
    const integrityFlags = r.flags_list.map((f) => toFlag(f, decodeText));
    return {
      ...toSummary({ ...r, calls: callsList.length }),
      flags: integrityFlags.map((f) => f.kind),
      item: r.item ? (JSON.parse(r.item) as Record<string, unknown>) : null,
      callsList,
      grades: r.grades_list.map(toGrade),
      integrityFlags,
    };
  }

  async importRollout(r: ImportedRollout): Promise<'imported' | 'exists'> {
    return this.tx(async (c) => {
      let lastScore: number | null = null;
      for (const g of r.grades) if (g.status === 'ok') lastScore = g.score;
      const inserted = await c.query(
        `INSERT INTO ${this.t.rollouts} (trace_id, created_at, updated_at, item, budget_limit, budget_used, budget_exceeded, next_seq, last_score, call_count)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (trace_id) DO NOTHING`,
        [
          encodeText(r.traceId),
          r.createdAt,
          r.updatedAt,
          r.item ? JSON.stringify(r.item) : null,
          r.budget.limit,
          r.budget.used,
          r.budget.exceeded,
          r.calls.reduce((m, call) => Math.max(m, call.seq), 0) + 1,
          lastScore,
          r.calls.length,
        ],
      );
      if (inserted.rowCount === 0) return 'exists';
      if (r.door !== undefined) await c.query(`UPDATE ${this.t.rollouts} SET door = $2 WHERE trace_id = $1`, [encodeText(r.traceId), r.door]);
      if (r.run !== undefined) await c.query(`UPDATE ${this.t.rollouts} SET run = $2 WHERE trace_id = $1`, [encodeText(r.traceId), r.run]);
      if (r.calls.length) {
        const calls = r.calls.map((call) => ({
          trace_id: encodeText(r.traceId),
          call_id: encodeText(call.callId),
          seq: call.seq,
          tool: call.tool,
          arguments: encodeText(call.arguments),
          args_hash: call.argsHash,
          output: encodeNullable(call.output),
          status: call.status,
          cost: call.cost,
          credential: encodeNullable(call.credential),
          started_at: call.startedAt,
          finished_at: call.finishedAt,
          duration_ms: call.durationMs,
          output_bytes: call.outputBytes,
          truncated: call.truncated,
          owner: null,
          sandbox: encodeNullable(call.sandbox),
        }));
        await c.query(`INSERT INTO ${this.t.calls} SELECT * FROM json_populate_recordset(NULL::${this.t.calls}, $1)`, [
          JSON.stringify(calls),
        ]);
      }
      for (const g of r.grades) {
        await c.query(
          `INSERT INTO ${this.t.grades} (${GRADE_COLUMNS})
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
          gradeValues({ ...g, traceId: r.traceId }, encodeText),
        );
      }
      return 'imported';
    });
  }

  async addFlag(f: NewFlag): Promise<void> {
    const sql = upsertFlagSql(this.dialect, f, encodeText(f.traceId), encodeText);
    await this.rows(sql.text, sql.params);
  }

  async rolloutTally(traceId: string): Promise<RolloutTally | undefined> {
    const [r] = await this.idempotent<{ calls: number; budget_exceeded: boolean }>(
      `SELECT call_count::int AS calls, budget_exceeded FROM ${this.t.rollouts} WHERE trace_id = $1`,
      [encodeText(traceId)],
      'rft_rollout_tally',
    );
    return r ? { calls: r.calls, budgetExceeded: r.budget_exceeded } : undefined;
  }

  async stats(q: StatsQuery): Promise<StatsRows> {
    const sql = statsSql(this.dialect, q);
    // One snapshot for the four figures: a repeatable-read transaction.
    const [calls, rolloutsStarted, grades, flags] = await retryOnce(() =>
      this.tx(async (c) => {
        await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const parts = q.parts ?? STATS_PARTS;
        const run = async (k: keyof StatsRows) => (parts.includes(k) ? (await c.query(sql[k].text, sql[k].params)).rows : []);
        return [await run('calls'), await run('rolloutsStarted'), await run('grades'), await run('flags')];
      }),
    );
    return { calls, rolloutsStarted, grades, flags } as StatsRows;
  }

  async rememberWebhookId(id: string, bodyHash: string, expiresAt: number, now: number): Promise<boolean> {
    // One atomic upsert: a new id is inserted; a present one is taken over if it has expired, and
    // accepted again with the same body (the sender's retry). Two replicas claiming the same id at
    // once: the second waits for the first and then sees its body.
    const w = this.t.webhookIds;
    const rows = await this.rows(
      `INSERT INTO ${w} (id, body_hash, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (id) DO UPDATE SET body_hash = EXCLUDED.body_hash, expires_at = GREATEST(${w}.expires_at, EXCLUDED.expires_at)
       WHERE ${w}.expires_at <= $4 OR ${w}.body_hash = EXCLUDED.body_hash
       RETURNING 1`,
      [encodeText(id), bodyHash, expiresAt, now],
      'rft_remember_webhook_id',
    );
    if (rows.length === 1 && Math.random() < 0.01) await this.rows(`DELETE FROM ${this.t.webhookIds} WHERE expires_at <= $1`, [now]);
    return rows.length === 1;
  }

  async markInterrupted(output: string, now: number, rerunTools: readonly string[] = []): Promise<number> {
    const res = await retryOnce(() => this.pool.query<{ interrupted: number }>(
      closeRunningSql(this.schema, '(c.owner = $4 OR c.started_at < $5)'),
      [encodeText(output), now, rerunTools, this.instanceId, now - this.orphanAfterMs],
    ));
    return res.rows[0]?.interrupted ?? 0;
  }

  async claimSandbox(traceId: string, boot: string, now: number): Promise<string> {
    const table = `${this.schema}.rollout_sandboxes`;
    // A row another process inserted after this statement's snapshot is read by the second query.
    const [mine] = await this.idempotent<{ boot: string }>(
      `WITH ins AS (INSERT INTO ${table} (trace_id, boot, created_at) VALUES ($1, $2, $3) ON CONFLICT (trace_id) DO NOTHING RETURNING boot)
       SELECT boot FROM ins UNION ALL SELECT boot FROM ${table} WHERE trace_id = $1 LIMIT 1`,
      [encodeText(traceId), boot, now],
      'rft_claim_sandbox',
    );
    return mine?.boot ?? (await this.sandboxBoot(traceId)) ?? boot;
  }

  async createSession(n: NewDoorSession, durability?: WriteDurability): Promise<void> {
    // 'committed' (WriteDurability): the statement's own transaction commits without waiting for the WAL
    // flush (synchronous_commit off for it alone, set by the statement; as insertGrade's).
    const committed = durability === 'committed';
    await this.rows(
      `INSERT INTO ${this.schema}.door_sessions (door, id, trace_id, environment, tools, run, state, created_at, last_used)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $8${committed ? ` FROM (SELECT set_config('synchronous_commit', 'off', true)) c` : ''}`,
      [n.door, encodeText(n.id), encodeText(n.traceId), n.environment, JSON.stringify(n.tools), n.run, encodeText(n.state), n.createdAt],
      `rft_create_session${committed ? '_committed' : ''}`,
    );
  }

  async getSession(door: string, id: string): Promise<StoredDoorSession | undefined> {
    const [r] = await this.idempotent<DoorSessionRow>(
      `SELECT s.*, r.item FROM ${this.schema}.door_sessions s LEFT JOIN ${this.t.rollouts} r ON r.trace_id = s.trace_id WHERE s.door = $1 AND s.id = $2`,
      [door, encodeText(id)],
      'rft_get_session',
    );
    return r && { ...toDoorSession(r, decodeText), item: r.item ? (JSON.parse(r.item) as Record<string, unknown>) : null };
  }

  async updateSession(door: string, id: string, version: number, change: SessionChange, now: number): Promise<boolean> {
    // A repeat after a lost reply finds the version bumped and says false: the caller reads the session again.
    const b = change.bound;
    const rows = await this.idempotent(
      `UPDATE ${this.schema}.door_sessions SET state = $1, ended = ended OR $2, version = version + 1, last_used = $3,
         environment = CASE WHEN $7 THEN $8 ELSE environment END, tools = coalesce($9, tools)
       WHERE door = $4 AND id = $5 AND version = $6 RETURNING 1`,
      [encodeText(change.state), change.ended === true, now, door, encodeText(id), version, b !== undefined, b?.environment ?? null, b ? JSON.stringify(b.tools) : null],
      'rft_update_session',
    );
    return rows.length === 1;
  }

  async deleteSession(door: string, id: string, durability?: WriteDurability): Promise<DoorSessionRecord | undefined> {
    const committed = durability === 'committed';
    const [r] = await this.idempotent<DoorSessionRow>(
      `DELETE FROM ${this.schema}.door_sessions WHERE door = $1 AND id = $2${committed ? ` AND set_config('synchronous_commit', 'off', true) IS NOT NULL` : ''} RETURNING *`,
      [door, encodeText(id)],
      `rft_delete_session${committed ? '_committed' : ''}`,
    );
    return r && toDoorSession(r, decodeText);
  }

  async expireSessions(door: string, before: number, limit: number): Promise<DoorSessionRecord[]> {
    // SKIP LOCKED: replicas sweeping at once each take their own rows, and each expired session is returned once.
    const rows = await this.rows<DoorSessionRow>(
      `DELETE FROM ${this.schema}.door_sessions WHERE (door, id) IN (
         SELECT door, id FROM ${this.schema}.door_sessions WHERE door = $1 AND last_used < $2 LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [door, before, limit],
      'rft_expire_sessions',
    );
    return rows.map((r) => toDoorSession(r, decodeText));
  }

  async sandboxBoot(traceId: string): Promise<string | undefined> {
    const [r] = await this.idempotent<{ boot: string }>(`SELECT boot FROM ${this.schema}.rollout_sandboxes WHERE trace_id = $1`, [encodeText(traceId)], 'rft_sandbox_boot');
    return r?.boot;
  }

  async ping(): Promise<void> {
    await this.idempotent(
      `INSERT INTO ${this.t.webhookIds} (id, expires_at) VALUES ('__readyz__', 0) ON CONFLICT (id) DO UPDATE SET expires_at = 0`,
    );
  }

  async close(): Promise<void> {
    if (this.pool.ended) return;
    await this.replicas.close();
    await this.pool.end();
  }
}
