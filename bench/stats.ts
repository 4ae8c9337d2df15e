// The dashboard's JSON routes on a large record: 1,000,000 tool calls (100,000 rollouts of 10 calls
// over 24 hours, graded by two versions of a grader, a few flagged), on SQLite and on Postgres.
// Each route is answered by the real app (app.inject: routing, validation, the store's queries,
// shaping, serialization); its latency is printed as p50 and p95 over repeated requests.
//
//   node --conditions=rft-source --import tsx bench/stats.ts [calls]   (default 1000000; RFT_TEST_DATABASE_URL for Postgres)
//
// The record is written straight into the tables (one INSERT ... SELECT per table, from a recursive
// CTE: the same SQL on both stores), after the store created its schema and indexes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

const CALLS = Number(process.argv[2] ?? 1_000_000);
const PER_ROLLOUT = 10;
const ROLLOUTS = Math.ceil(CALLS / PER_ROLLOUT);
const SPAN_MS = 24 * 3_600_000;
const URL = process.env.RFT_TEST_DATABASE_URL ?? 'postgres://rft:rft@127.0.0.1:5432/rft';
const KEY = 'bench-key-0123456789abcdef';
const now = Date.now();
const t0 = now - SPAN_MS;

/** The record's rows, as INSERT ... SELECT statements over integers 0..ROLLOUTS-1 (`i`) and 0..9 (`j`). */
function fillSql(t: { rollouts: string; calls: string; grades: string; flags: string }, bool: (e: string) => string): string[] {
  const rows = `WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < ${ROLLOUTS - 1})`;
  const start = `(${t0} + i * ${Math.floor(SPAN_MS / ROLLOUTS)})`;
  const hash = (e: string, m: number) => `((${e}) * 2654435761 % ${m})`;
  // later rollouts score better and spend less budget: a run that learns
  const right = `${hash('i', 1000)} < 250 + 650 * i / ${ROLLOUTS}`;
  return [
    `INSERT INTO ${t.rollouts} (trace_id, created_at, updated_at, item, budget_limit, budget_used, budget_exceeded, next_seq, last_score, call_count)
     ${rows} SELECT 'trace_' || i, ${start}, ${start} + 60000, '{}', 12, ${PER_ROLLOUT}, ${bool(`${hash('i', 40)} = 0`)}, ${PER_ROLLOUT + 1},
       CASE WHEN ${right} THEN 1.0 ELSE 0.0 END, ${PER_ROLLOUT} FROM r`,
    `INSERT INTO ${t.calls} (trace_id, call_id, seq, tool, arguments, args_hash, output, status, cost, credential, started_at, finished_at,
       duration_ms, output_bytes, truncated)
     ${rows}, c(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM c WHERE j < ${PER_ROLLOUT - 1})
     SELECT 'trace_' || i, 'call_' || j, j + 1,
       CASE ${hash('i * 10 + j', 4)} WHEN 0 THEN 'search_docs' WHEN 1 THEN 'read_doc' WHEN 2 THEN 'list_docs' ELSE 'shell' END,
       '{"query":"quarterly revenue"}', 'h', 'an output of about sixty bytes, as a short tool output would be',
       CASE WHEN ${hash('i * 10 + j', 100)} < 85 THEN 'ok' WHEN ${hash('i * 10 + j', 100)} < 92 THEN 'tool_error'
            WHEN ${hash('i * 10 + j', 100)} < 95 THEN 'invalid_arguments' WHEN ${hash('i * 10 + j', 100)} < 98 THEN 'budget_exceeded'
            WHEN ${hash('i * 10 + j', 100)} < 99 THEN 'timeout' ELSE 'interrupted' END,
       1, 'trainer', ${start} + j * 5000, ${start} + j * 5000 + 3, 0.2 + ${hash('i * 10 + j', 5000)} / 10.0, 60, ${bool('1 = 0')}
     FROM r, c`,
    `INSERT INTO ${t.grades} (trace_id, grader, grader_version, sample_hash, sample, status, score, subscores, explanation, error, credential,
       source, created_at, duration_ms)
     ${rows} SELECT 'trace_' || i, 'answer_match', CASE WHEN i < ${ROLLOUTS / 2} THEN 'v1' ELSE 'v2' END, 'sh', '{"output_text":"x"}',
       CASE WHEN ${hash('i', 100)} = 0 THEN 'error' ELSE 'ok' END,
       CASE WHEN ${hash('i', 100)} = 0 THEN NULL WHEN ${right} THEN 1.0 ELSE 0.0 END, NULL, NULL, NULL, 'trainer', 'endpoint', ${start} + 55000, 2.5
     FROM r WHERE ${hash('i', 20)} <> 0`,
    `INSERT INTO ${t.flags} (trace_id, kind, events, call_id, detail, created_at, updated_at)
     ${rows} SELECT 'trace_' || i, CASE WHEN ${hash('i', 2)} = 0 THEN 'path_escape' ELSE 'no_tool_score' END, 1, NULL, 'd', ${start} + 1000, ${start} + 1000
     FROM r WHERE ${hash('i', 200)} = 0`,
  ];
}

async function appFor(env: Record<string, string>, dataDir: string): Promise<FastifyInstance> {
  const app = await buildApp(
    loadConfig({
      RFT_DATA_DIR: dataDir, RFT_API_KEYS: `bench:${KEY}`, RFT_LOG_LEVEL: 'silent', RFT_SANDBOX: 'none', RFT_RATE_LIMIT: '0',
      RFT_TOOLS_DIR: join(import.meta.dirname, 'units/tools'), RFT_GRADERS_DIR: join(import.meta.dirname, 'units/graders'), ...env,
    }),
  );
  await app.ready();
  return app;
}

const CURVE = 'include=rollouts,grades,integrity';
const ROUTES: [string, string, number][] = [
  ['stats, now: 15 min by minute (dashboard)', '/v1/stats?since=15m&bucket=1m&include=calls,rollouts,grades', 30],
  ['stats, curve: 6 h, 5 min buckets (dashboard)', `/v1/stats?since=6h&${CURVE}`, 15],
  ['stats, curve: all 24 h, 15 min buckets', `/v1/stats?since=24h&${CURVE}`, 10],
  ['stats, everything over 1 h (calls too)', '/v1/stats?since=1h', 10],
  ['stats, everything over 24 h (every call)', '/v1/stats?since=24h', 3],
  ['rollouts, newest 50', '/v1/rollouts?limit=50', 30],
  ['rollouts, tool=shell', '/v1/rollouts?limit=50&tool=shell', 30],
  ['rollouts, outcome=timeout', '/v1/rollouts?limit=50&outcome=timeout', 30],
  ['rollouts, min_score=0.5', '/v1/rollouts?limit=50&min_score=0.5', 30],
  ['rollouts, grader=answer_match', '/v1/rollouts?limit=50&grader=answer_match', 30],
  ['rollouts, flagged (0.5% of them)', '/v1/rollouts?limit=50&flag=any', 15],
  ['rollouts, a tool never called (all scanned)', '/v1/rollouts?limit=50&tool=nothing', 3],
  ['one rollout', `/v1/rollouts/trace_${ROLLOUTS - 7}`, 30],
];

async function measure(label: string, app: FastifyInstance): Promise<void> {
  console.log(`\n${label}: ${CALLS.toLocaleString()} calls, ${ROLLOUTS.toLocaleString()} rollouts\n`);
  console.log('route                                          p50 ms   p95 ms   reply KB');
  for (const [name, url, n] of ROUTES) {
    const times: number[] = [];
    let bytes = 0;
    for (let k = 0; k < n + 1; k++) {
      const t = performance.now();
      const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${KEY}` } });
      if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      if (k > 0) times.push(performance.now() - t); // the first one warms caches and statements
      bytes = res.rawPayload.length;
    }
    times.sort((a, b) => a - b);
    const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(1);
    console.log(`${name.padEnd(45)}${q(0.5).padStart(8)}${q(0.95).padStart(9)}${(bytes / 1024).toFixed(1).padStart(11)}`);
  }
}

const keepAlive = setInterval(() => undefined, 60_000);
const dir = mkdtempSync(join(tmpdir(), 'rft-bench-stats-'));
try {
  // SQLite: the store creates the schema, the record is filled with its connection closed.
  await (await appFor({}, dir)).close();
  const db = new Database(join(dir, 'rft.sqlite'));
  let t = performance.now();
  db.transaction(() => {
    for (const sql of fillSql({ rollouts: 'rollouts', calls: 'calls', grades: 'grades', flags: 'integrity_flags' }, (e) => `(${e})`)) db.exec(sql);
  })();
  db.exec('ANALYZE');
  db.close();
  console.log(`SQLite record written in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const sqlite = await appFor({}, dir);
  await measure('SQLite', sqlite);
  await sqlite.close();

  const schema = `rft_bench_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: URL, connectionTimeoutMillis: 3_000 });
  const reachable = await client.connect().then(() => true, () => false);
  if (!reachable) {
    console.log(`\nPostgres: not reachable at ${URL.replace(/:[^:@/]*@/, ':***@')}, skipped`);
  } else {
    const env = { RFT_STORE: 'postgres', RFT_DATABASE_URL: URL, RFT_PG_SCHEMA: schema, RFT_INSTANCE_ID: 'bench' };
    try {
      await (await appFor(env, dir)).close();
      t = performance.now();
      const s = `"${schema}"`;
      for (const sql of fillSql({ rollouts: `${s}.rollouts`, calls: `${s}.calls`, grades: `${s}.grades`, flags: `${s}.integrity_flags` }, (e) => `(${e})`)) {
        await client.query(sql);
      }
      await client.query(`VACUUM ANALYZE ${s}.rollouts, ${s}.calls, ${s}.grades, ${s}.integrity_flags`);
      console.log(`\nPostgres record written in ${((performance.now() - t) / 1000).toFixed(1)} s`);
      const postgres = await appFor(env, dir);
      await measure('Postgres', postgres);
      await postgres.close();
    } finally {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  clearInterval(keepAlive);
}
