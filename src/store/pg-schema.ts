// Postgres tables of the store: the same columns and meaning as SQLite's (src/store/sqlite.ts), plus
// calls.owner (the replica that started a call), and begin_call(), which does a call's whole
// admission (rollout insert, replay check, budget charge, seq) in one round trip under a row lock.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { insightsDdl, postgresDialect } from '../stats/insights.js';
import { DEFAULT_DOOR, gradesDdl } from './rows.js';
import { LIMIT_PLACEHOLDER } from './types.js';

/** Double-quoted identifier; names are also checked by config, this keeps any caller safe. */
export function quoteIdent(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) throw new Error(`invalid Postgres schema name "${name}"`);
  return `"${name}"`;
}

// Times are ms since epoch (bigint, parsed to number); costs and budgets are double precision
// because a tool may cost 0.5 units, as SQLite's INTEGER affinity allows. trace_id uses the C
// collation so listings sort (and cursors compare) byte-wise, exactly like SQLite.
const ddl = (s: string) => `
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.rollouts (
  trace_id text COLLATE "C" PRIMARY KEY,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  item text,
  budget_limit double precision NOT NULL,
  budget_used double precision NOT NULL DEFAULT 0,
  budget_exceeded boolean NOT NULL DEFAULT false,
  next_seq bigint NOT NULL DEFAULT 1,
  last_score double precision,
  -- its recorded calls (next_seq - 1 counts un-begun attempts too: seq is never reused)
  call_count bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 70);
-- No index on updated_at (nor on any column a call changes): every call updates its rollout row, and
-- with free space in the page (fillfactor) that update is HOT, with no index entry to write.
CREATE INDEX IF NOT EXISTS rollouts_created ON ${s}.rollouts (created_at DESC, trace_id DESC);
CREATE TABLE IF NOT EXISTS ${s}.calls (
  trace_id text COLLATE "C" NOT NULL,
  call_id text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  tool text NOT NULL,
  arguments text NOT NULL,
  args_hash text NOT NULL,
  output text,
  status text NOT NULL,
  cost double precision NOT NULL,
  credential text,
  started_at bigint NOT NULL,
  finished_at bigint,
  duration_ms double precision,
  output_bytes bigint,
  truncated boolean NOT NULL DEFAULT false,
  owner text,
  PRIMARY KEY (trace_id, call_id)
);
-- Small (running calls only); lets a booting replica find its calls without scanning the history.
CREATE INDEX IF NOT EXISTS calls_running ON ${s}.calls (owner, started_at) WHERE status = 'running';
${gradesDdl(`${s}.grades`, { id: 'bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY', key: 'text COLLATE "C"', text: 'text', real: 'double precision', int: 'bigint' })}
CREATE TABLE IF NOT EXISTS ${s}.webhook_ids (
  id text PRIMARY KEY,
  expires_at bigint NOT NULL
);
ALTER TABLE ${s}.webhook_ids ADD COLUMN IF NOT EXISTS body_hash text;
-- Which server process made each rollout's sandbox (Store.claimSandbox): after a restart, a rollout
-- whose sandbox an earlier process made has lost its workspace.
CREATE TABLE IF NOT EXISTS ${s}.rollout_sandboxes (
  trace_id text COLLATE "C" PRIMARY KEY,
  boot text NOT NULL,
  created_at bigint NOT NULL
);
-- Schemas made before calls kept the sandbox they used (RecordedCall.sandbox): their calls say none.
ALTER TABLE ${s}.calls ADD COLUMN IF NOT EXISTS sandbox text;
-- Schemas made before the record kept each rollout's door: all of them came through Agent RFT's
-- (a constant default: no table rewrite).
ALTER TABLE ${s}.rollouts ADD COLUMN IF NOT EXISTS door text NOT NULL DEFAULT '${DEFAULT_DOOR}';
-- Schemas made before rollouts carried a run label (x-rft-run): theirs have none.
ALTER TABLE ${s}.rollouts ADD COLUMN IF NOT EXISTS run text;
-- Schemas made before rollouts kept their count of recorded calls: counted once (under the schema lock).
DO $mig$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                 WHERE table_schema = '${s.slice(1, -1)}' AND table_name = 'rollouts' AND column_name = 'call_count') THEN
    ALTER TABLE ${s}.rollouts ADD COLUMN call_count bigint NOT NULL DEFAULT 0;
    UPDATE ${s}.rollouts r SET call_count = (SELECT count(*) FROM ${s}.calls c WHERE c.trace_id = r.trace_id);
  END IF;
END $mig$;
-- A door's sessions (Store.createSession): any replica serves them, and a restart keeps them.
CREATE TABLE IF NOT EXISTS ${s}.door_sessions (
  door text NOT NULL,
  id text COLLATE "C" NOT NULL,
  trace_id text COLLATE "C" NOT NULL,
  environment text,
  tools text NOT NULL,
  run text,
  state text NOT NULL,
  version bigint NOT NULL DEFAULT 1,
  ended boolean NOT NULL DEFAULT false,
  created_at bigint NOT NULL,
  last_used bigint NOT NULL,
  PRIMARY KEY (door, id)
) WITH (fillfactor = 70);
CREATE INDEX IF NOT EXISTS door_sessions_used ON ${s}.door_sessions (door, last_used);
${insightsDdl(postgresDialect(s), { key: 'text COLLATE "C"', text: 'text', int: 'bigint' })}

-- Returns {kind, call, used, limit, exceeded}; call is the calls row as JSON (snake_case keys).
-- The FOR UPDATE lock on the rollout row serialises admissions of one rollout across every
-- replica, so the budget check and charge see each other and seq follows arrival order.
CREATE OR REPLACE FUNCTION ${s}.begin_call(
  p_trace text, p_call text, p_tool text, p_args text, p_hash text, p_cost double precision,
  p_limit double precision, p_item text, p_credential text, p_now bigint, p_over text, p_over_bytes bigint, p_owner text
) RETURNS json LANGUAGE plpgsql AS $fn$
DECLARE
  r ${s}.rollouts%ROWTYPE;
  c ${s}.calls%ROWTYPE;
BEGIN
  INSERT INTO ${s}.rollouts (trace_id, created_at, updated_at, item, budget_limit)
    VALUES (p_trace, p_now, p_now, p_item, p_limit) ON CONFLICT (trace_id) DO NOTHING;
  SELECT * INTO STRICT r FROM ${s}.rollouts WHERE trace_id = p_trace FOR UPDATE;
  SELECT * INTO c FROM ${s}.calls WHERE trace_id = p_trace AND call_id = p_call;
  IF FOUND THEN
    RETURN json_build_object(
      'kind', CASE WHEN c.args_hash = p_hash AND c.tool = p_tool THEN 'existing' ELSE 'conflict' END,
      'call', row_to_json(c), 'used', r.budget_used, 'limit', r.budget_limit, 'exceeded', r.budget_exceeded);
  END IF;
  IF r.budget_used + p_cost > r.budget_limit THEN
    -- The text quotes the limit enforced here (the rollout's), not the one this call's row asked for.
    p_over := replace(p_over, '${LIMIT_PLACEHOLDER}', r.budget_limit::bigint::text);
    INSERT INTO ${s}.calls (trace_id, call_id, seq, tool, arguments, args_hash, output, status, cost, credential,
        started_at, finished_at, duration_ms, output_bytes, truncated, owner)
      VALUES (p_trace, p_call, r.next_seq, p_tool, p_args, p_hash, p_over, 'budget_exceeded', 0, p_credential,
        p_now, p_now, 0, octet_length(p_over), false, p_owner)
      RETURNING * INTO c;
    UPDATE ${s}.rollouts SET budget_exceeded = true, next_seq = next_seq + 1, call_count = call_count + 1, updated_at = p_now WHERE trace_id = p_trace;
    RETURN json_build_object('kind', 'over_budget', 'call', row_to_json(c),
      'used', r.budget_used, 'limit', r.budget_limit, 'exceeded', true);
  END IF;
  INSERT INTO ${s}.calls (trace_id, call_id, seq, tool, arguments, args_hash, output, status, cost, credential,
      started_at, owner)
    VALUES (p_trace, p_call, r.next_seq, p_tool, p_args, p_hash, NULL, 'running', p_cost, p_credential, p_now, p_owner)
    RETURNING * INTO c;
  UPDATE ${s}.rollouts SET budget_used = budget_used + p_cost, next_seq = next_seq + 1, call_count = call_count + 1, updated_at = p_now
    WHERE trace_id = p_trace;
  RETURN json_build_object('kind', 'started', 'call', row_to_json(c),
    'used', r.budget_used + p_cost, 'limit', r.budget_limit, 'exceeded', r.budget_exceeded);
END
$fn$;

-- Several admissions of one rollout (queued on one replica while the previous one committed) in
-- one transaction, in the given order: one commit instead of one per call. Returns their results.
CREATE OR REPLACE FUNCTION ${s}.begin_calls(p_trace text, p_item text, p_owner text, p_calls json)
RETURNS json LANGUAGE plpgsql AS $fn$
DECLARE
  e json;
  results json[] := '{}';
  first boolean := true;
BEGIN
  FOR e IN SELECT x.value FROM json_array_elements(p_calls) WITH ORDINALITY AS x(value, n) ORDER BY x.n LOOP
    results := results || ${s}.begin_call(p_trace, e->>'call_id', e->>'tool', e->>'arguments', e->>'args_hash',
      (e->>'cost')::double precision, (e->>'limit')::double precision, CASE WHEN first THEN p_item END,
      e->>'credential', (e->>'now')::bigint, e->>'over', (e->>'over_bytes')::bigint, p_owner);
    first := false;
  END LOOP;
  RETURN array_to_json(results);
END
$fn$;
`;

/** Creates the schema, or brings it up to this version's statements (ddl above). */
export async function ensureSchema(client: pg.ClientBase, schema: string): Promise<void> {
  await applySchemaPart(client, schema, 'store', ddl(quoteIdent(schema)));
}

const DEADLOCK = '40P01';
const DDL_ATTEMPTS = 5;

/**
 * Runs one part's schema statements (CREATE ... IF NOT EXISTS, ALTER ... IF NOT EXISTS, CREATE OR
 * REPLACE FUNCTION) unless the schema already has exactly these statements applied: the digest of
 * the text is kept in `schema_parts`. Those statements lock tables even when they change nothing
 * (CREATE INDEX IF NOT EXISTS takes a share lock, ALTER TABLE an exclusive one), so a replica booting
 * beside live ones deadlocked with their calls and boot-time interrupts, and failed its boot (a CI
 * run); a boot on an up-to-date schema now takes no table lock at all. Replicas booting together
 * are serialised by a transaction-scoped advisory lock keyed by the schema name (CREATE ... IF NOT
 * EXISTS is not safe against concurrent creators). A real change (a new version beside older
 * replicas) still locks, and a deadlock there is retried.
 */
export async function applySchemaPart(client: pg.ClientBase, schema: string, part: string, statements: string): Promise<void> {
  const s = quoteIdent(schema);
  const digest = createHash('sha256').update(statements).digest('hex');
  for (let attempt = 1; ; attempt++) {
    await client.query('BEGIN');
    try {
      await client.query("SELECT pg_advisory_xact_lock(hashtext('rft-endpoints schema ' || $1))", [schema]);
      if ((await appliedDigest(client, s, part)) !== digest) {
        await client.query(statements);
        await client.query(`CREATE TABLE IF NOT EXISTS ${s}.schema_parts (part text PRIMARY KEY, digest text NOT NULL, applied_at bigint NOT NULL)`);
        await client.query(
          `INSERT INTO ${s}.schema_parts (part, digest, applied_at) VALUES ($1, $2, $3)
           ON CONFLICT (part) DO UPDATE SET digest = excluded.digest, applied_at = excluded.applied_at`,
          [part, digest, Date.now()],
        );
      }
      await client.query('COMMIT');
      return;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      if ((e as { code?: unknown }).code !== DEADLOCK || attempt >= DDL_ATTEMPTS) throw e;
      await new Promise((r) => setTimeout(r, 20 * attempt + Math.random() * 50));
    }
  }
}

/** The digest of the statements last applied for this part, if the schema records one. */
async function appliedDigest(client: pg.ClientBase, s: string, part: string): Promise<string | undefined> {
  const table = `${s}.schema_parts`;
  const { rows: found } = await client.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]);
  if (found[0]?.t == null) return undefined;
  const { rows } = await client.query<{ digest: string }>(`SELECT digest FROM ${table} WHERE part = $1`, [part]);
  return rows[0]?.digest;
}
