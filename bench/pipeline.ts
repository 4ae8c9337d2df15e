// Benchmark: a no-op tool call through the full pipeline (auth, ledger begin + finish in SQLite,
// budget, record) against a bare Fastify route returning the same JSON, 50 connections each,
// servers in child processes, autocannon here. Rows: the default (SQLite sync=full) and
// sync=normal. Also prints the CPU each request costs the server and the client
// (from /proc), and the WAL fdatasync latency of this disk alone, which bound the figures. Last,
// both routes again with an 8 KB dataset row in every call.
//
//   node --import tsx bench/pipeline.ts [seconds]
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const seconds = Number(process.argv[2] ?? 10);
const connections = 50;

/** CPU time (user + system) of a process so far, in seconds; NaN where /proc is missing. */
function cpuSeconds(pid: number | 'self'): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

async function start(mode: string) {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'pipeline-server.ts'), mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(proc.stdout!, 'data')) as [Buffer];
  return { url: line.toString().trim(), proc };
}

interface Row {
  label: string;
  itemBytes: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  serverUs: number;
  clientUs: number;
}

async function run(label: string, mode: string, tool = 'noop', itemBytes = 0): Promise<Row> {
  const { url, proc } = await start(mode);
  // The trainer may send the dataset row with every call: `itemBytes` of it, or `{}`.
  const item = itemBytes > 0 ? { messages: [{ role: 'user', content: 'x'.repeat(itemBytes) }] } : {};
  let n = 0;
  const body = () => {
    n++;
    // ten calls per rollout, unique call ids: every request is a real new call, never a replay
    return JSON.stringify({ type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: tool, arguments: '{"q":"x"}', trace_id: `trace_bench_${Math.floor(n / 10)}`, item });
  };
  const opts = {
    url: `${url}/tools`,
    connections,
    duration: seconds,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench-key-0123456789abcdef' },
    requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, body: body() }) }],
  };
  await autocannon({ ...opts, duration: 2 }); // warm-up
  const s0 = cpuSeconds(proc.pid!);
  const c0 = cpuSeconds('self');
  const r = await autocannon(opts);
  const us = (cpu: number) => (cpu * 1e6) / r.requests.total;
  const row = {
    label,
    itemBytes,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts + r.non2xx,
    serverUs: us(cpuSeconds(proc.pid!) - s0),
    clientUs: us(cpuSeconds('self') - c0),
  };
  proc.kill('SIGTERM');
  await once(proc, 'exit');
  return row;
}

/** fdatasync after a 4 KiB append, this disk alone (no load): the floor of a sync=full reply. */
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
  await run('full pipeline (default: sync=full)', 'full'),
  await run('full pipeline, sync=normal', 'full:normal'),
  await run('bare, 8 KB dataset row per call', 'bare', 'noop', 8000),
  await run('full pipeline, 8 KB row per call', 'full', 'noop', 8000),
];
const fmt = (x: number, d = 1) => x.toFixed(d).padStart(9);
console.log(`\nno-op tool call, ${connections} connections, ${seconds} s each (2 cores; server and autocannon share them)\n`);
console.log('route                                 req/s   p50 ms   p99 ms  errors  rps ratio p99 ratio  server us/req client us/req');
for (const r of rows) {
  // Each row against the bare route with the same body.
  const bare = rows.find((b) => b.label.startsWith('bare') && b.itemBytes === r.itemBytes)!;
  console.log(
    `${r.label.padEnd(35)}${fmt(r.rps, 0)}${fmt(r.p50)}${fmt(r.p99)}${String(r.errors).padStart(8)}${fmt(r.rps / bare.rps, 2)}x${fmt(r.p99 / Math.max(bare.p99, 1), 2)}x${fmt(r.serverUs)}${fmt(r.clientUs)}`,
  );
}
console.log(`\nfdatasync of a 4 KiB append on this disk, unloaded: p50 ${fsyncFloorMs().toFixed(2)} ms`);
console.log('target: full pipeline >= 0.5x the bare route throughput, p99 <= 2x');
process.exit(0);
