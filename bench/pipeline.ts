// Benchmark: a no-op tool call through the full pipeline (auth, ledger begin+finish in SQLite,
// budget, record) against a bare Fastify route returning the same JSON, 50 connections each,
// servers in child processes, autocannon here. Also the same no-op declared readOnly (its start
// is not waited on; its result is). Run: node --import tsx bench/pipeline.ts [seconds]
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';

const seconds = Number(process.argv[2] ?? 10);
const connections = 50;

async function start(mode: string) {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'pipeline-server.ts'), mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(proc.stdout!, 'data')) as [Buffer];
  return { url: line.toString().trim(), proc };
}

async function run(mode: string, tool = 'noop') {
  const { url, proc } = await start(mode);
  let n = 0;
  const body = () => {
    n++;
    // ten calls per rollout, unique call ids: every request is a real new call, never a replay
    return JSON.stringify({ type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: tool, arguments: '{"q":"x"}', trace_id: `trace_bench_${Math.floor(n / 10)}`, item: {} });
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
  const r = await autocannon(opts);
  proc.kill('SIGTERM');
  const errors = r.errors + r.timeouts + r.non2xx;
  return { mode, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors };
}

const bare = await run('bare');
const full = await run('full');
const normal = await run('full-normal');
const readOnly = await run('full', 'noop_read');
const fmt = (x: number) => x.toFixed(1).padStart(9);
console.log(`\nno-op tool call, ${connections} connections, ${seconds} s each (2 cores)\n`);
console.log('route                               req/s     p50 ms    p99 ms   errors   rps ratio  p99 ratio');
const labels = ['bare Fastify route', 'full pipeline (SQLite sync=FULL)', 'full pipeline (SQLite sync=NORMAL)', 'read-only tool (sync=FULL)'];
for (const [i, r] of [bare, full, normal, readOnly].entries()) {
  const label = labels[i]!;
  const ratio = (x: number) => x.toFixed(2).padStart(9);
  console.log(`${label.padEnd(34)}${fmt(r.rps)}${fmt(r.p50)}${fmt(r.p99)}${String(r.errors).padStart(9)}${ratio(r.rps / bare.rps)}x${ratio(r.p99 / Math.max(bare.p99, 1))}x`);
}
console.log('\ntarget: full pipeline >= 0.5x the bare route throughput, p99 <= 2x');
process.exit(0);
