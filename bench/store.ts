// Store throughput: beginCall + finishCall pairs per second at 50 concurrent callers, SQLite (the
// baseline: one transaction per event-loop turn, group fsync) against Postgres (one replica's pool, and two replicas
// each with its own pool on one schema), in two shapes: callers spread over many rollouts (10 calls
// each, like a training step) and all callers on one rollout (every admission takes the same row
// lock). Both stores fsync each commit (Postgres: fsync and synchronous_commit as configured).
//
//   node --conditions=rft-source --import tsx bench/store.ts            (RFT_TEST_DATABASE_URL, default the .ci/setup-postgres.sh URL)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PostgresStore } from '../src/store/postgres.js';
import { SqliteStore } from '../src/store/sqlite.js';
import type { Store } from '../src/store/types.js';

const URL = process.env.RFT_TEST_DATABASE_URL ?? 'postgres://rft:rft@127.0.0.1:5432/rft';
const CALLERS = 50;
const PER_CALLER = Number(process.env.BENCH_CALLS ?? 100);
const POOL = Number(process.env.BENCH_POOL ?? 10);

type Shape = 'spread' | 'one rollout';

/** Runs CALLERS workers; worker k uses stores[k % stores.length]. Returns pairs per second. */
async function run(stores: Store[], shape: Shape, tag: string): Promise<number> {
  let seq = 0;
  const worker = async (k: number) => {
    const store = stores[k % stores.length]!;
    for (let i = 0; i < PER_CALLER; i++) {
      const n = seq++;
      const traceId = shape === 'spread' ? `${tag}_${k}_${Math.floor(i / 10)}` : `${tag}_hot`;
      const callId = `c${n}`;
      await store.beginCall({
        traceId, callId, tool: 'noop', arguments: '{"q":"x"}', argsHash: 'h', cost: 1, budgetLimit: 1e9,
        item: { question: 'q', n: k }, credential: 'bench', now: Date.now(), overBudgetOutput: 'spent',
      });
      await store.finishCall(traceId, callId, { output: 'ok '.repeat(40), status: 'ok', finishedAt: Date.now(), durationMs: 0.1, outputBytes: 120, truncated: false });
    }
  };
  await Promise.all(Array.from({ length: CALLERS }, (_, k) => worker(k))); // warm-up round
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CALLERS }, (_, k) => worker(k + CALLERS)));
  return (CALLERS * PER_CALLER) / ((performance.now() - t0) / 1000);
}

// Holds the process until the end (idle Postgres pools let it exit between phases).
const keepAlive = setInterval(() => undefined, 60_000);
const dir = mkdtempSync(join(tmpdir(), 'rft-bench-store-'));
const schema = `rft_bench_${randomBytes(4).toString('hex')}`;
const results: { store: string; shape: Shape; perS: number }[] = [];
try {
  for (const shape of ['spread', 'one rollout'] as const) {
    const sqlite = new SqliteStore({ path: join(dir, `${shape.replace(' ', '_')}.sqlite`) });
    results.push({ store: 'sqlite', shape, perS: await run([sqlite], shape, 's') });
    await sqlite.close();

    const one = await PostgresStore.open({ url: URL, schema, instanceId: 'bench-a', poolSize: POOL });
    results.push({ store: `postgres, 1 replica (pool ${POOL})`, shape, perS: await run([one], shape, `p1${shape[0]}`) });
    const other = await PostgresStore.open({ url: URL, schema, instanceId: 'bench-b', poolSize: POOL });
    results.push({ store: `postgres, 2 replicas (pool ${POOL} each)`, shape, perS: await run([one, other], shape, `p2${shape[0]}`) });
    await Promise.all([one.close(), other.close()]);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  const c = new pg.Client({ connectionString: URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await c.end();
}

console.log(`beginCall + finishCall pairs per second, ${CALLERS} concurrent callers, ${CALLERS * PER_CALLER} pairs per figure`);
for (const shape of ['spread', 'one rollout'] as const) {
  const base = results.find((r) => r.shape === shape && r.store === 'sqlite')!.perS;
  console.log(`\n${shape === 'spread' ? 'spread over rollouts (10 calls each)' : 'all callers on one rollout'}`);
  for (const r of results.filter((x) => x.shape === shape)) {
    console.log(`  ${r.store.padEnd(38)} ${r.perS.toFixed(0).padStart(7)} /s   x${(r.perS / base).toFixed(2)} of sqlite`);
  }
}
clearInterval(keepAlive);
