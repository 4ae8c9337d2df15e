// Replicas coordinating through Postgres (see replicas.ts for what and why):
// - Liveness: each replica holds a session-level advisory lock keyed by its instance id, on a
//   connection of its own, for as long as it runs. When its process dies, Postgres ends the session
//   and the lock is gone at once, so `replica_alive(owner)` (a look at pg_locks) tells whether the
//   owner of a running call or of a sandbox is still there.
// - Placements: the `sandboxes` table (one row per rollout: owner, engine, container, last use).
//   claim_sandbox() decides in one round trip who creates a rollout's sandbox.
// - Serial order: a serial call waits until no serial call of its rollout with a smaller seq is
//   running on another live replica (a ticket lock: seq is the ticket, given by begin_call() under the
//   rollout's row lock). Waits poll; they only happen when a rollout's calls overlap across replicas.
import pg from 'pg';
import type { Logger } from 'pino';
import { applySchemaPart, quoteIdent } from './pg-schema.js';
import { retryOnce } from './pg-retry.js';
import { closeRunningSql } from './pg-interrupt.js';
import { encodeText } from './pg-text.js';
import type { Claim, Placement, PlacementStore } from '../sandbox/placements.js';
import type { Replicas } from './replicas.js';

const WAIT_POLL_MS = 25;
const RELOCK_EVERY_MS = 1_000;

const ddl = (s: string, keyPrefix: string) => `
CREATE TABLE IF NOT EXISTS ${s}.sandboxes (
  trace_id text COLLATE "C" PRIMARY KEY,
  owner text NOT NULL,
  engine text,
  container text,
  created_at bigint NOT NULL,
  last_used bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS sandboxes_owner ON ${s}.sandboxes (owner);

CREATE OR REPLACE FUNCTION ${s}.replica_key(p_owner text) RETURNS bigint LANGUAGE sql IMMUTABLE AS
  $fn$ SELECT hashtextextended(${keyPrefix} || p_owner, 0) $fn$;

-- True while the replica named p_owner holds its liveness lock (a bigint advisory lock shows in
-- pg_locks as classid = high 32 bits, objid = low 32 bits, objsubid = 1).
CREATE OR REPLACE FUNCTION ${s}.replica_alive(p_owner text) RETURNS boolean LANGUAGE sql STABLE AS $fn$
  SELECT EXISTS (
    SELECT 1 FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND objsubid = 1
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND classid::bigint = (${s}.replica_key(p_owner) >> 32) & 4294967295
      AND objid::bigint = ${s}.replica_key(p_owner) & 4294967295)
$fn$;

-- Who creates a rollout's sandbox: {kind: mine | placed | busy}; placed carries where it is.
CREATE OR REPLACE FUNCTION ${s}.claim_sandbox(p_trace text, p_owner text, p_now bigint)
RETURNS json LANGUAGE plpgsql AS $fn$
DECLARE
  r ${s}.sandboxes%ROWTYPE;
BEGIN
  INSERT INTO ${s}.sandboxes (trace_id, owner, created_at, last_used) VALUES (p_trace, p_owner, p_now, p_now)
    ON CONFLICT (trace_id) DO NOTHING;
  IF FOUND THEN
    RETURN json_build_object('kind', 'mine');
  END IF;
  SELECT * INTO r FROM ${s}.sandboxes WHERE trace_id = p_trace FOR UPDATE;
  IF NOT FOUND THEN
    RETURN json_build_object('kind', 'busy');
  END IF;
  IF r.container IS NOT NULL THEN
    RETURN json_build_object('kind', 'placed', 'engine', r.engine, 'container', r.container, 'owner', r.owner);
  END IF;
  -- A creation nobody finishes: this replica's own from before a restart, or a gone replica's.
  IF r.owner = p_owner OR NOT ${s}.replica_alive(r.owner) THEN
    UPDATE ${s}.sandboxes SET owner = p_owner, created_at = p_now, last_used = p_now WHERE trace_id = p_trace;
    RETURN json_build_object('kind', 'mine');
  END IF;
  RETURN json_build_object('kind', 'busy');
END
$fn$;
`;

interface PlacementRow {
  trace_id: string;
  owner: string;
  engine: string | null;
  container: string | null;
  last_used: number;
}

const toPlacement = (r: PlacementRow): Placement => ({ traceId: r.trace_id, owner: r.owner, engine: r.engine, container: r.container, lastUsed: r.last_used });

/** Creates the replicas' tables and functions, as the store's own schema part (applySchemaPart). */
export async function ensureReplicaSchema(client: pg.ClientBase, schema: string): Promise<void> {
  // The schema name is checked by quoteIdent ([A-Za-z0-9_]), so it is safe inside a string literal.
  await applySchemaPart(client, schema, 'replicas', ddl(quoteIdent(schema), `'rft-endpoints replica ${schema} '`));
}

class PgPlacements implements PlacementStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly s: string,
  ) {}

  async claim(traceId: string, owner: string, now: number): Promise<Claim> {
    const res = await this.pool.query<{ c: Claim }>({ name: `${this.s}-claim`, text: `SELECT ${this.s}.claim_sandbox($1, $2, $3) AS c`, values: [traceId, owner, now] });
    return res.rows[0]!.c;
  }

  async place(traceId: string, owner: string, engine: string, container: string, now: number): Promise<boolean> {
    const res = await retryOnce(() =>
      this.pool.query(
        `UPDATE ${this.s}.sandboxes SET engine = $3, container = $4, last_used = $5
         WHERE trace_id = $1 AND ((owner = $2 AND container IS NULL) OR container = $4)`,
        [traceId, owner, engine, container, now],
      ),
    );
    return res.rowCount === 1;
  }

  async release(traceId: string, container: string | null, owner: string): Promise<void> {
    await retryOnce(() =>
      container === null
        ? this.pool.query(`DELETE FROM ${this.s}.sandboxes WHERE trace_id = $1 AND owner = $2 AND container IS NULL`, [traceId, owner])
        : this.pool.query(`DELETE FROM ${this.s}.sandboxes WHERE trace_id = $1 AND container = $2`, [traceId, container]),
    );
  }

  async touch(traceId: string, now: number): Promise<void> {
    await this.pool.query({ name: `${this.s}-touch`, text: `UPDATE ${this.s}.sandboxes SET last_used = $2 WHERE trace_id = $1 AND last_used < $2`, values: [traceId, now] });
  }

  async get(traceId: string): Promise<Placement | undefined> {
    const res = await retryOnce(() => this.pool.query<PlacementRow>(`SELECT * FROM ${this.s}.sandboxes WHERE trace_id = $1`, [traceId]));
    return res.rows[0] ? toPlacement(res.rows[0]) : undefined;
  }

  async idle(owner: string, before: number): Promise<Placement[]> {
    const res = await retryOnce(() =>
      this.pool.query<PlacementRow>(
        `SELECT * FROM ${this.s}.sandboxes WHERE last_used < $2 AND (owner = $1 OR NOT ${this.s}.replica_alive(owner))`,
        [owner, before],
      ),
    );
    return res.rows.map(toPlacement);
  }

  async containersOf(owner: string): Promise<Set<string>> {
    const res = await retryOnce(() =>
      this.pool.query<{ container: string }>(`SELECT container FROM ${this.s}.sandboxes WHERE owner = $1 AND container IS NOT NULL`, [owner]),
    );
    return new Set(res.rows.map((r) => r.container));
  }

  async isLive(owner: string): Promise<boolean> {
    const res = await retryOnce(() => this.pool.query<{ live: boolean }>(`SELECT ${this.s}.replica_alive($1) AS live`, [owner]));
    return res.rows[0]?.live === true;
  }
}

export class PgReplicas implements Replicas {
  readonly placements: PlacementStore;
  private lock: pg.Client | null = null;
  private closed = false;
  private relock: NodeJS.Timeout | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly s: string,
    private readonly clientConfig: pg.ClientConfig,
    private readonly owner: string,
    private readonly log: Logger | undefined,
  ) {
    this.placements = new PgPlacements(pool, s);
  }

  /**
   * Takes this replica's liveness lock. If another session holds it (a previous process of this
   * replica whose session has not ended yet, or, by mistake, a second process with the same id),
   * the replica starts anyway, says so, and takes the lock as soon as it is free: meanwhile the
   * other session keeps the id alive for the other replicas.
   */
  static async start(pool: pg.Pool, schema: string, clientConfig: pg.ClientConfig, owner: string, log?: Logger): Promise<PgReplicas> {
    const r = new PgReplicas(pool, quoteIdent(schema), clientConfig, owner, log);
    if (!(await r.takeLock())) {
      log?.warn({ instance_id: owner }, 'another live session holds this replica id (RFT_INSTANCE_ID must differ between replicas); taking it when it is free');
      r.retryLock();
    }
    return r;
  }

  /** Connects and takes the lock; false if another session holds it. */
  private async takeLock(): Promise<boolean> {
    const client = new pg.Client({ ...this.clientConfig, keepAlive: true, application_name: `rft-endpoints liveness ${this.owner}`.slice(0, 63) });
    client.on('error', () => {}); // a broken connection ends the session; 'end' below takes it from there
    await client.connect();
    const res = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${this.s}.replica_key($1)) AS ok`, [this.owner]);
    if (!res.rows[0]?.ok) {
      await client.end().catch(() => {});
      return false;
    }
    this.lock = client;
    client.once('end', () => this.lost(client));
    return true;
  }

  /** The liveness connection broke (the database restarted): take the lock again as soon as possible. */
  private lost(client: pg.Client): void {
    if (this.closed || this.lock !== client) return;
    this.lock = null;
    this.log?.warn({ instance_id: this.owner }, 'liveness lock lost with its connection; other replicas see this one as gone until it is back');
    this.retryLock();
  }

  private retryLock(): void {
    this.relock = setTimeout(() => {
      if (this.closed) return;
      this.takeLock().then(
        (ok) => (ok ? this.log?.info({ instance_id: this.owner }, 'liveness lock taken') : this.retryLock()),
        () => this.retryLock(),
      );
    }, RELOCK_EVERY_MS);
    this.relock.unref();
  }

  async serialTurn(traceId: string, seq: number, serialTools: readonly string[], signal: AbortSignal): Promise<void> {
    if (serialTools.length === 0) return;
    const q = {
      name: `${this.s}-serial-turn`,
      text: `SELECT 1 FROM ${this.s}.calls
             WHERE trace_id = $1 AND status = 'running' AND seq < $2 AND tool = ANY($3)
               AND owner IS DISTINCT FROM $4 AND ${this.s}.replica_alive(owner)
             LIMIT 1`,
      values: [traceId, seq, serialTools, this.owner],
    };
    for (;;) {
      const res = await retryOnce(() => this.pool.query(q));
      if (res.rowCount === 0) return;
      if (signal.aborted) throw signal.reason;
      await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
    }
  }

  async interruptOrphan(traceId: string, callId: string, output: string, now: number, rerunTools: readonly string[] = []): Promise<boolean> {
    const res = await this.pool.query<{ interrupted: number; dropped: number }>(
      closeRunningSql(this.s, `c.trace_id = $4 AND c.call_id = $5 AND c.owner IS NOT NULL AND c.owner <> $6 AND NOT ${this.s}.replica_alive(c.owner)`),
      [encodeText(output), now, rerunTools, traceId, callId, this.owner],
    );
    const r = res.rows[0];
    return !!r && r.interrupted + r.dropped === 1;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.relock);
    const client = this.lock;
    this.lock = null;
    await client?.end().catch(() => {});
  }
}
