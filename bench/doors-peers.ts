// Benchmark: an ORS session one at a time (issue 41: "one trainer at a time as fast as the peers"), the
// door against the ORS reference server (openrewardstandard/python-sdk's `ors.Server` as shipped, FastAPI +
// uvicorn, bench/ors_reference.py: the same environment, nothing recorded), same run. A session is what the
// SDK's client sends for one episode: POST /create_session (an event stream: its id), /create {env_name,
// split, index}, a `noop` tool call and a `submit` tool call on /bench/call (event streams), /delete_session;
// the door records all of it (SQLite sync=full) and grades the submit with reference_match. Rounds
// alternate the targets (the order reversed every other round), each round N sessions one after another on
// one keep-alive connection per target; p50/p99 of a whole session over all rounds, and with
// --concurrency C, C such loops at once (each its own connection).
//
//   python3.11 -m venv /tmp/peers-venv && /tmp/peers-venv/bin/pip install fastapi uvicorn structlog sse-starlette tenacity aiohttp
//   /tmp/peers-venv/bin/pip install --no-deps <a checkout of openrewardstandard/python-sdk>
//   BENCH_PYTHON=/tmp/peers-venv/bin/python node --conditions=rft-source --import tsx bench/doors-peers.ts [rounds] [per round] [--concurrency C]
//                                                                                  (default 6 rounds of 100, concurrency 1)
import { loadavg } from 'node:os';
import { Client } from 'undici';
import { fmt, startServer, startUvicorn, stopServer } from './lib/load.js';

const python = process.env.BENCH_PYTHON;
if (!python) {
  console.error('BENCH_PYTHON: a Python with the ORS python-sdk (package `ors`), fastapi and uvicorn (see the header of bench/doors-peers.ts)');
  process.exit(2);
}
const args = process.argv.slice(2);
const ci = args.indexOf('--concurrency');
const concurrency = ci >= 0 ? Number(args.splice(ci, 2)[1]) : 1;
const rounds = Number(args[0] ?? 6);
const perRound = Number(args[1] ?? 100);

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  clients: Client[];
  ms: number[];
  /** Time per step of a session, summed over the timed sessions. */
  steps: Record<string, number>;
}

async function post(c: Client, path: string, headers: Record<string, string>, body: string | undefined, t?: Target, step?: string): Promise<string> {
  const t0 = performance.now();
  const res = await c.request({ method: 'POST', path, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  if (t && step) t.steps[step] = (t.steps[step] ?? 0) + performance.now() - t0;
  return text;
}

let n = 0;
/** One episode as the SDK's client plays it; the reward the submit's stream carries is checked. */
async function session(t: Target, c: Client): Promise<void> {
  const k = ++n;
  const t0 = performance.now();
  const created = await post(c, '/create_session', { ...t.headers, accept: 'text/event-stream' }, undefined, t, 'create_session');
  const sid = /event: task_id\r?\ndata: (\S+)/.exec(created)?.[1];
  if (!sid) throw new Error(`${t.name}: no task_id in ${created.slice(0, 200)}`);
  const h = { ...t.headers, 'x-session-id': sid };
  await post(c, '/create', h, JSON.stringify({ env_name: 'bench', split: 'train', index: 0 }), t, 'create');
  const stream = { ...h, accept: 'text/event-stream' };
  await post(c, '/bench/call', stream, JSON.stringify({ name: 'noop', input: { q: String(k) } }), t, 'noop');
  const right = k % 2 === 0;
  const graded = await post(c, '/bench/call', stream, JSON.stringify({ name: 'submit', input: { answer: right ? '42' : '41' } }), t, 'submit');
  const reward = /"reward":\s*([0-9.]+)/.exec(graded)?.[1];
  if (reward === undefined || Number(reward) !== (right ? 1 : 0)) throw new Error(`${t.name}: reward ${reward} for ${right ? 'a right' : 'a wrong'} answer: ${graded.slice(0, 300)}`);
  await post(c, '/delete_session', h, undefined, t, 'delete_session');
  t.ms.push(performance.now() - t0);
}

async function loops(t: Target, count: number): Promise<void> {
  await Promise.all(t.clients.map(async (c, i) => {
    for (let j = i; j < count; j += t.clients.length) await session(t, c);
  }));
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

const reference = await startUvicorn(python, 'ors_reference:app', `is the ORS python-sdk (ors), fastapi and uvicorn installed for ${python}?`, { quiet: true });
const ours = await startServer('full');
const [mainUrl] = ours.url.split(' ') as [string];
const loadBefore = loadavg();
const make = (name: string, url: string, headers: Record<string, string>): Target => ({ name, url, headers, clients: Array.from({ length: concurrency }, () => new Client(url)), ms: [], steps: {} });
const targets: Target[] = [
  make('ORS reference server (python-sdk), no record', reference.url, {}),
  make('ORS door, every call and the grade recorded', mainUrl, { 'x-api-key': 'bench-key-0123456789abcdef' }),
];
const started = performance.now();
const wall = new Map<Target, number>(targets.map((t) => [t, 0]));
try {
  for (const t of targets) await loops(t, 30); // warm-up
  for (const t of targets) {
    t.ms.length = 0;
    t.steps = {};
  }
  for (let r = 0; r < rounds; r++) {
    for (const t of r % 2 ? [...targets].reverse() : targets) {
      const t0 = performance.now();
      await loops(t, perRound);
      wall.set(t, wall.get(t)! + performance.now() - t0);
    }
  }
} finally {
  await Promise.all(targets.flatMap((t) => t.clients.map((c) => c.close())));
  await stopServer(ours);
  await stopServer(reference);
}
const [base] = targets as [Target, Target];
console.log(`\nORS sessions at concurrency ${concurrency}: ${rounds} rounds x ${perRound} sessions per target, alternating, ${((performance.now() - started) / 1000).toFixed(0)} s; load before ${loadBefore.map((l) => l.toFixed(1)).join(' ')}, after ${loadavg().map((l) => l.toFixed(1)).join(' ')}\n`);
console.log('target                                            sessions/s  p50 ms   p99 ms   vs reference (sessions/s, p50)');
const rate = (t: Target) => (rounds * perRound) / (wall.get(t)! / 1000);
for (const t of targets) {
  console.log(`${t.name.padEnd(48)}${fmt(rate(t), 0)}${fmt(pct(t.ms, 50), 2)}${fmt(pct(t.ms, 99), 2)}   ${(rate(t) / rate(base)).toFixed(2)}x, ${(pct(base.ms, 50) / pct(t.ms, 50)).toFixed(2)}x`);
}
console.log('\nmean ms per step: ' + targets.map((t) => `${t.name.split(',')[0]}: ${Object.entries(t.steps).map(([k, v]) => `${k} ${(v / t.ms.length).toFixed(2)}`).join(', ')}`).join('; '));
const ratio = rate(targets[1]!) / rate(base);
console.log(`target: the ORS door at >= 1x the reference server (sessions/s): ${ratio.toFixed(2)}x, ${ratio >= 1 ? 'met' : 'NOT met'}`);
process.exit(0);
