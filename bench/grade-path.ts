// Benchmark: the grade path's own cost. POST /graders/reference_match (a grader that only compares
// the answer with the row's reference; the grade and its rollout recorded, sync=full) against a
// FastAPI route doing the same comparison with no record (bench/fastapi_grader.py, uvicorn, as
// OpenAI's and Azure's sample grader servers are built). Same body: a finqa row (about 2.3 KB) as
// `item`, a new trace_id per request (each grade creates its rollout: the record's heavier case).
// One process each, 50 connections, autocannon here. Needs Debian's python3-fastapi and uvicorn.
//
//   node --import tsx bench/grade-path.ts [seconds]     (default 10)
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fmt, load, startServer, startUvicorn, stopServer, type LoadResult, type Server } from './lib/load.js';

const seconds = Number(process.argv[2] ?? 10);
const connections = 50;
const python = process.env.BENCH_PYTHON ?? '/usr/bin/python3';

const row = JSON.parse(readFileSync(join(import.meta.dirname, '../examples/finqa/train.jsonl'), 'utf8').split('\n')[0]!) as Record<string, unknown>;
let n = 0;
const body = () => {
  n++;
  const answer = n % 2 ? String(row.reference_answer) : 'about 48 million';
  return JSON.stringify({
    sample: { output_text: answer, output_json: null, output_tools: [], choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }] },
    item: row,
    // the trainer's shape (trace_ + UUID): a new rollout's keys land anywhere in the record's indexes
    trace_id: `trace_${randomUUID()}`,
  });
};

const startFastApi = () => startUvicorn(python, 'fastapi_grader:app', 'apt-get install -y python3-fastapi uvicorn');

async function measure(start: () => Promise<Server>, headers: Record<string, string> = {}): Promise<LoadResult> {
  const server = await start();
  try {
    return await load(server, '/graders/reference_match', body, { seconds, connections, headers });
  } finally {
    await stopServer(server);
  }
}

console.log(`grade body: ${Buffer.byteLength(body())} bytes`);
const fastapi = await measure(startFastApi);
const auth = { authorization: 'Bearer bench-key-0123456789abcdef' };
const ours = await measure(() => startServer('full'), auth);
const normal = await measure(() => startServer('full:normal'), auth);
const bare = await measure(() => startServer('bare'));
console.log(`\ngrade path, ${connections} connections, ${seconds} s each\n`);
console.log('route                                        req/s   p50 ms   p99 ms  errors  rps ratio  server us/req');
const rows = [
  ['FastAPI + uvicorn, no record', fastapi],
  ['rft-endpoints, grade recorded (sync=full)', ours],
  ['rft-endpoints, sync=normal (no fsync)', normal],
  ['bare Fastify route, no record', bare],
] as const;
for (const [label, r] of rows) {
  console.log(`${label.padEnd(42)}${fmt(r.rps, 0)}${fmt(r.p50)}${fmt(r.p99)}${String(r.errors).padStart(8)}${fmt(r.rps / fastapi.rps, 2)}x${fmt(r.serverUs)}`);
}
console.log(`target: >= 1x FastAPI's throughput with the record durable: ${ours.rps >= fastapi.rps && ours.errors === 0 ? 'met' : 'NOT met'}`);
process.exit(0);
