// Benchmark: a no-op tool call through the full pipeline (auth, ledger begin + finish in SQLite,
// budget, record) against a bare Fastify route returning the same JSON, 50 connections each,
// servers in child processes, autocannon here. Rows: the default (SQLite sync=full) and
// sync=normal. Also prints the CPU each request costs the server and the client (from /proc), and
// the fdatasync latency of this disk alone, which bounds the sync=full figures. Then both routes
// again with an 8 KB dataset row in every call, and last the default with metrics on and off
// (RFT_METRICS=false), alternated twice: what counting costs the tool path.
//
//   node --conditions=rft-source --import tsx bench/pipeline.ts [seconds]       (default 10)
import { randomUUID } from 'node:crypto';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, load, startServer, stopServer, type LoadResult } from './lib/load.js';
import { Metrics } from '../src/metrics/metrics.js';

const seconds = Number(process.argv[2] ?? 10);
const connections = 50;

interface Row extends LoadResult {
  label: string;
  itemBytes: number;
}

async function run(label: string, mode: string, itemBytes = 0): Promise<Row> {
  const server = await startServer(mode);
  // The trainer may send the dataset row with every call: `itemBytes` of it, or `{}`.
  const item = itemBytes > 0 ? { messages: [{ role: 'user', content: 'x'.repeat(itemBytes) }] } : {};
  let n = 0;
  let trace = '';
  const body = () => {
    // ten calls per rollout, unique call ids: every request is a real new call, never a replay. Ids
    // shaped as the trainer's (trace_ + UUID, random call ids): keys land all over the record's
    // indexes, as they do in a job (sequential ids would only ever append).
    if (n++ % 10 === 0) trace = `trace_${randomUUID()}`;
    const call = `call_${randomUUID().slice(0, 24)}`;
    return JSON.stringify({ type: 'function_call', id: `fc_${call.slice(5)}`, call_id: call, name: 'noop', arguments: '{"q":"x"}', trace_id: trace, item });
  };
  try {
    const r = await load(server, '/tools', body, { seconds, connections, headers: { authorization: 'Bearer bench-key-0123456789abcdef' } });
    return { label, itemBytes, ...r };
  } finally {
    await stopServer(server);
  }
}

/** CPU time of what the tool path records per call (its outcome and handler time, and the request's time), 10^6 times. */
function countingCostUs(): number {
  const m = new Metrics({ processMetrics: false });
  m.declare(['noop'], []);
  const n = 1_000_000;
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    m.toolCall('noop', 'ok', 0.00005);
    m.http('/tools', 200, 0.0001);
  }
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / n;
}

/** fdatasync after a 4 KiB append, this disk alone: the floor of a sync=full commit. */
function fsyncFloorMs(): number {
  const dir = mkdtempSync(join(tmpdir(), 'rft-bench-fsync-'));
  try {
    const fd = openSync(join(dir, 'f'), 'w');
    const page = Buffer.alloc(4096, 1);
    const t: number[] = [];
    for (let i = 0; i < 200; i++) {
      writeSync(fd, page);
      const t0 = performance.now();
      fdatasyncSync(fd);
      t.push(performance.now() - t0);
    }
    closeSync(fd);
    return t.sort((a, b) => a - b)[100]!;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows = [
  await run('bare Fastify route', 'bare'),
  await run('full pipeline, sync=full (default)', 'full'),
  await run('full pipeline, sync=normal', 'full:normal'),
  await run('bare, 8 KB dataset row per call', 'bare', 8000),
  await run('full pipeline, 8 KB row per call', 'full', 8000),
];
// Metrics on (the default) and off, alternated so that drift of the shared machine hits both alike.
const metricPairs: [Row, Row][] = [];
for (let i = 0; i < 2; i++) {
  metricPairs.push([await run('full pipeline, metrics on (default)', 'full'), await run('full pipeline, RFT_METRICS=false', 'full:nometrics')]);
}
rows.push(...metricPairs.flat());
console.log(`\nno-op tool call, ${connections} connections, ${seconds} s each (server and autocannon share the machine's cores)\n`);
console.log('route                                 req/s   p50 ms   p99 ms  errors  rps ratio p99 ratio  server us/req client us/req');
for (const r of rows) {
  // Each row against the bare route with the same body.
  const bare = rows.find((b) => b.label.startsWith('bare') && b.itemBytes === r.itemBytes)!;
  console.log(
    `${r.label.padEnd(35)}${fmt(r.rps, 0)}${fmt(r.p50)}${fmt(r.p99)}${String(r.errors).padStart(8)}${fmt(r.rps / bare.rps, 2)}x${fmt(r.p99 / Math.max(bare.p99, 1), 2)}x${fmt(r.serverUs)}${fmt(r.clientUs)}`,
  );
}
const cost = metricPairs.map(([on, off]) => 1 - on.rps / off.rps).sort((a, b) => a - b);
console.log(
  `\nmetrics on vs off (alternated pairs): ${cost.map((c) => `${(c * 100).toFixed(1)}%`).join(', ')} fewer calls/s with metrics; ` +
    `server us/req on ${metricPairs.map(([on]) => on.serverUs.toFixed(1)).join(', ')} vs off ${metricPairs.map(([, off]) => off.serverUs.toFixed(1)).join(', ')}`,
);
console.log(`what one call's counting costs alone (in this process, CPU time): ${countingCostUs().toFixed(2)} us per call`);
console.log(`\nfdatasync of a 4 KiB append on this disk: p50 ${fsyncFloorMs().toFixed(2)} ms`);
const dflt = rows[1]!;
const ok = dflt.rps >= 0.25 * rows[0]!.rps && dflt.p99 <= 3 * Math.max(rows[0]!.p99, 1);
console.log(`target: the default >= 0.25x the bare route's calls/s with p99 <= 3x: ${ok ? 'met' : 'NOT met'} (${dflt.rps.toFixed(0)} calls/s)`);
process.exit(0);
