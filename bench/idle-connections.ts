// Benchmark (issue 37): 2,000 idle connections on the credential-less listeners (the NeMo Gym door's and
// the private one, 1,000 each: half silent since they connected, half with headers that never end) while
// 50 concurrent clients call the main listener's POST /tools (a no-op tool, autocannon). The p99 with
// the idle connections against the p99 without, same server, same run (rounds of without, then with, alternated:
// the ratio is of the medians). An idle connection the server closes (room made for another, or
// its headers timeout) is opened again after 1 s, as a flood that keeps coming would. The server runs
// under `ulimit -n` of each value given (default 1024, the descriptor limit of the report that found a
// private-listener flood starving the trainer's calls, and 8192, where the listeners' shares hold all
// 2,000). The bench itself needs more than 2,000 descriptors: below 4,096 it re-runs itself under
// `sh -c 'ulimit -n 4096 && exec node ...'` (the soft limit, raised up to the hard one).
//
//   node --conditions=rft-source --import tsx bench/idle-connections.ts [seconds] [nofile,...] [rounds]   (default 10 1024,8192 3)
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { fmt, load, stopServer, type LoadResult, type Server } from './lib/load.js';
import { openFileLimit } from '../src/http/connections.js';

const OWN_NOFILE = 4096;
if ((openFileLimit() ?? OWN_NOFILE) < OWN_NOFILE && !process.env.RFT_BENCH_REEXEC) {
  const r = spawnSync('sh', ['-c', `ulimit -n ${OWN_NOFILE} && exec "$0" "$@"`, process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, RFT_BENCH_REEXEC: '1' },
  });
  process.exit(r.status ?? 1);
}

const seconds = Number(process.argv[2] ?? 10);
const limits = (process.argv[3] ?? '1024,8192').split(',').map(Number);
const IDLE = 2_000;
const connections = 50;
const REOPEN_MS = 1_000;
/** Rounds of (without, with), alternated: the machine's load drifts, the ratio is of the medians. */
const ROUNDS = Number(process.argv[4] ?? 3);
const auth = { authorization: 'Bearer bench-key-0123456789abcdef' };
const row = { reference_answer: '42', tool_budget: 1_000_000_000 };

/** bench/pipeline-server.ts with the NeMo Gym door and the private listener, under `ulimit -n nofile`. */
async function startServer(nofile: number): Promise<Server> {
  const script = join(import.meta.dirname, 'pipeline-server.ts');
  const proc = spawn('sh', ['-c', `ulimit -n ${nofile} && exec "$0" --conditions=rft-source --import tsx "${script}" full:gym:private`, process.execPath], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(proc.stdout!, 'data')) as [Buffer];
  return { url: line.toString().trim(), proc };
}

/** IDLE connections kept open (each opened again REOPEN_MS after the server closes it) until stop(). */
function idleFlood(urls: string[]) {
  let open = 0;
  let closedByServer = 0;
  let stopping = false;
  const sockets = new Set<Socket>();
  const slot = (i: number): void => {
    const { hostname, port } = new URL(urls[i % urls.length]!);
    const s = connect({ host: hostname, port: Number(port) });
    let connected = false;
    sockets.add(s);
    s.on('error', () => {});
    s.once('connect', () => {
      connected = true;
      open++;
      // half silent, half with a request whose headers never end
      if (i % 2) s.write('POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n');
    });
    s.once('close', () => {
      sockets.delete(s);
      if (connected) open--;
      if (stopping) return;
      closedByServer++;
      setTimeout(() => stopping || slot(i), REOPEN_MS).unref();
    });
  };
  for (let i = 0; i < IDLE; i++) slot(i);
  return {
    stats: () => ({ open, closedByServer }),
    stop: () => {
      stopping = true;
      for (const s of sockets) s.destroy();
    },
  };
}

interface Row {
  phase: string;
  r: LoadResult;
  idle?: { openMin: number; openMax: number; closedByServer: number };
}

let n = 0;
const toolCall = () => JSON.stringify({ type: 'function_call', call_id: `call_${++n}`, name: 'noop', arguments: '{}', trace_id: `trace_${n % 50}`, item: row });
const loadBefore = loadavg();
const results: { nofile: number; rows: Row[] }[] = [];
for (const nofile of limits) {
  process.stderr.write(`server under ulimit -n ${nofile}: starting\n`);
  const server = await startServer(nofile);
  const [url, gymUrl, privateUrl] = server.url.split(' ') as [string, string, string];
  const main = { ...server, url };
  const rows: Row[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      process.stderr.write(`  round ${round}: without idle connections (${seconds} s)\n`);
      rows.push({ phase: `${round}: without idle`, r: await load(main, '/tools', toolCall, { seconds, connections, headers: auth }) });
      process.stderr.write(`  round ${round}: opening ${IDLE} idle connections, then ${seconds} s of calls\n`);
      const flood = idleFlood([gymUrl, privateUrl]);
      // Every slot has connected once (or been closed to make room) before the clock starts.
      const t0 = Date.now();
      while (flood.stats().open + flood.stats().closedByServer < IDLE && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 50));
      let openMin = Infinity;
      let openMax = 0;
      const sample = setInterval(() => {
        openMin = Math.min(openMin, flood.stats().open);
        openMax = Math.max(openMax, flood.stats().open);
      }, 100);
      const closedBefore = flood.stats().closedByServer;
      const r = await load(main, '/tools', toolCall, { seconds, connections, headers: auth });
      clearInterval(sample);
      rows.push({ phase: `${round}: with ${IDLE.toLocaleString('en')} idle`, r, idle: { openMin, openMax, closedByServer: flood.stats().closedByServer - closedBefore } });
      flood.stop();
    }
  } finally {
    process.stderr.write(`  stopping the server\n`);
    await stopServer(server);
  }
  results.push({ nofile, rows });
}

for (const { nofile, rows } of results) {
  const budget = Math.max(64, Math.floor(nofile / 2));
  console.log(`\nserver ulimit -n ${nofile}: connections main ${budget - 2 * Math.floor(budget / 4)}, nemo-gym ${Math.floor(budget / 4)}, private ${Math.floor(budget / 4)}`);
  console.log(`${'phase'.padEnd(24)}${'req/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(9)}  idle connections open (client side, min-max), closed by the server during the run`);
  for (const { phase, r, idle } of rows) {
    console.log(`${phase.padEnd(24)}${fmt(r.rps, 0)}${fmt(r.p50)}${fmt(r.p99)}${fmt(r.errors, 0)}  ${idle ? `${idle.openMin}-${idle.openMax}, ${idle.closedByServer}` : ''}`);
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const without = rows.filter((x) => !x.idle).map((x) => x.r);
  const withIdle = rows.filter((x) => x.idle).map((x) => x.r);
  const p99 = median(withIdle.map((r) => r.p99)) / median(without.map((r) => r.p99));
  const rps = median(withIdle.map((r) => r.rps)) / median(without.map((r) => r.rps));
  console.log(`median p99 with / without: ${p99.toFixed(2)}x (target <= 1.5x); median throughput ${rps.toFixed(2)}x; errors with: ${withIdle.reduce((a, r) => a + r.errors, 0)}, without: ${without.reduce((a, r) => a + r.errors, 0)}`);
}
console.log(`load average (1, 5, 15 min): before ${loadBefore.map((v) => v.toFixed(2)).join(', ')}, after ${loadavg().map((v) => v.toFixed(2)).join(', ')}`);
