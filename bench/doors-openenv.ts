// Benchmark: what the OpenEnv door adds. A no-op tool call (a call_tool step of noop on one of 50 sockets, each
// in an episode) and a grade (a reset and a submit: an episode) against Agent RFT's POST /tools and POST /grade,
// on one server (bench/pipeline-server.ts full:private, sync=full, the bench environment of bench/units/environments), same
// run, 50 connections. Each socket sends its next frame when the previous reply arrives, as OpenEnv's client does.
//
//   node --conditions=rft-source --import tsx bench/doors-openenv.ts [seconds]     (default 5)
import { loadavg } from 'node:os';
import WebSocket from 'ws';
import { cpuSeconds, fmt, load, startServer, stopServer, type LoadResult, type Server } from './lib/load.js';

const seconds = Number(process.argv[2] ?? 5);
const connections = 50;
const auth = { authorization: 'Bearer bench-key-0123456789abcdef' };
const server = await startServer('full:private');
const [url, privateUrl] = server.url.split(' ') as [string, string];
const main = { ...server, url };
const row = { reference_answer: '42', tool_budget: 1_000_000_000 };
const answer = (i: number) => (i % 2 ? '42' : 'about 42');

/** 50 sockets, each looping `frames` (one in flight, replies in order) for `secs`; one sample = one loop. */
async function wsLoad(s: Server, frames: (i: number) => unknown[], secs: number, setup: unknown[]): Promise<LoadResult> {
  const sockets = await Promise.all(
    Array.from({ length: connections }, async () => {
      const ws = new WebSocket(`${privateUrl.replace('http', 'ws')}/bench/ws`);
      await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
      const ask = (f: unknown) => new Promise<{ type: string }>((r) => (ws.once('message', (d: Buffer) => r(JSON.parse(d.toString()) as { type: string })), ws.send(JSON.stringify(f))));
      for (const f of setup) await ask(f);
      return { ws, ask };
    }),
  );
  const run = async (ms: number, lat: number[]) => {
    let errors = 0;
    let n = 0;
    const end = Date.now() + ms;
    await Promise.all(
      sockets.map(async ({ ask }) => {
        while (Date.now() < end) {
          const t = performance.now();
          for (const f of frames(++n)) if ((await ask(f)).type === 'error') errors++;
          lat.push(performance.now() - t);
        }
      }),
    );
    return errors;
  };
  await run(2_000, []);
  const lat: number[] = [];
  const s0 = cpuSeconds(s.proc.pid!);
  const t0 = performance.now();
  const errors = await run(secs * 1000, lat);
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(s.proc.pid!) - s0;
  for (const { ws } of sockets) ws.close();
  lat.sort((a, b) => a - b);
  return { rps: lat.length / elapsed, p50: lat[Math.floor(lat.length / 2)]!, p99: lat[Math.floor(lat.length * 0.99)]!, errors, serverUs: (cpu * 1e6) / lat.length, clientUs: NaN };
}

let n = 0;
const rows: [string, LoadResult][] = [];
const load0 = loadavg()[0]!;
try {
  rows.push(['POST /tools (noop)', await load(main, '/tools', () => JSON.stringify({ type: 'function_call', call_id: `call_${++n}`, name: 'noop', arguments: '{}', trace_id: `trace_${n % 50}`, item: row }), { seconds, connections, headers: auth })]);
  rows.push(['WS call_tool noop', await wsLoad(server, () => [{ type: 'step', data: { type: 'call_tool', tool_name: 'noop', arguments: {} } }], seconds, [{ type: 'reset', data: { index: 0 } }])]);
  rows.push(['POST /grade', await load(main, '/grade', () => JSON.stringify({ sample: { output_text: answer(++n), output_tools: [], choices: [] }, item: row, trace_id: `trace_g${n}` }), { seconds, connections, headers: auth })]);
  rows.push(['WS reset + submit', await wsLoad(server, (i) => [{ type: 'reset', data: { index: 0 } }, { type: 'step', data: { type: 'call_tool', tool_name: 'submit', arguments: { answer: answer(i) } } }], seconds, [])]);
} finally {
  await stopServer(server);
}

console.log(`load average ${load0.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end (${seconds} s per row)`);
console.log(`${'route'.padEnd(22)}${'req/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(9)}${'srv us'.padStart(9)}  door vs Agent RFT (time per request, p99, server CPU per request)`);
for (const [i, [name, r]] of rows.entries()) {
  const base = rows[i - (i % 2)]![1];
  const vs = i % 2 ? `${(base.rps / r.rps).toFixed(2)}x, p99 ${(r.p99 / base.p99).toFixed(2)}x, CPU ${(r.serverUs / base.serverUs).toFixed(2)}x` : 'baseline';
  console.log(`${name.padEnd(22)}${fmt(r.rps, 0)}${fmt(r.p50)}${fmt(r.p99)}${fmt(r.errors, 0)}${fmt(r.serverUs, 0)}  ${vs}`);
}
