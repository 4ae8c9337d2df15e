// Benchmark: a trainer's session one at a time (issue 41: "one trainer at a time as fast as the peers"), each door
// against its trainer's own reference server, same run, alternating rounds; nothing recorded by the peers.
// --door ors: the ORS reference server (openrewardstandard/python-sdk's `ors.Server` as shipped, FastAPI +
//   uvicorn, bench/ors_reference.py). A session is what the SDK's client sends for one episode: POST
//   /create_session (an event stream: its id), /create {env_name, split, index}, a `noop` tool call and a
//   `submit` tool call on /bench/call (event streams), /delete_session.
// --door gym: a NeMo Gym resources server built on NeMo Gym's own SimpleResourcesServer (bench/gym_reference.py:
//   its session middleware, a `noop` tool route, a verify comparing the answer with the row's reference). A session
//   is what Gym's simple_agent sends for one rollout: POST /seed_session (the row; a session cookie), one tool
//   call POST /noop with the cookie, POST /verify (the row and the response) with the cookie.
// --door both (default): the four targets in the same rounds.
// The doors (bench/pipeline-server.ts full:gym) record all of it (SQLite sync=full) and grade with
// reference_match; each session's reward is checked (right and wrong answers alternate). Rounds alternate the
// targets (the order reversed every other round), each round N sessions one after another on one keep-alive
// connection per target; p50/p99 of a whole session over all rounds, per-step means, and with --concurrency C,
// C such loops at once (each its own connection).
//
//   python3.11 -m venv /tmp/peers-venv && /tmp/peers-venv/bin/pip install fastapi uvicorn structlog sse-starlette tenacity aiohttp
//   /tmp/peers-venv/bin/pip install --no-deps <a checkout of openrewardstandard/python-sdk>
//   (gym: a Python 3.11 with NeMo Gym's source importable as nemo_gym; see bench/README.md "Doors against their peers")
//   BENCH_PYTHON=/tmp/peers-venv/bin/python BENCH_GYM_PYTHON=<gym python> node --conditions=rft-source --import tsx \
//     bench/doors-peers.ts [rounds] [per round] [--door ors|gym|both] [--concurrency C]   (default 6 rounds of 100, both, concurrency 1)
import { loadavg } from 'node:os';
import { Client } from 'undici';
import { fmt, startServer, startUvicorn, stopServer, type Server } from './lib/load.js';

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1] : undefined;
};
const concurrency = Number(option('--concurrency') ?? 1);
const door = option('--door') ?? 'both';
if (!['ors', 'gym', 'both'].includes(door)) {
  console.error('--door ors|gym|both');
  process.exit(2);
}
const rounds = Number(args[0] ?? 6);
const perRound = Number(args[1] ?? 100);
const doors = door === 'both' ? (['ors', 'gym'] as const) : ([door] as ['ors' | 'gym']);
const orsPython = process.env.BENCH_PYTHON;
const gymPython = process.env.BENCH_GYM_PYTHON;
if (doors.includes('ors' as never) && !orsPython) {
  console.error('BENCH_PYTHON: a Python with the ORS python-sdk (package `ors`), fastapi and uvicorn (see the header of bench/doors-peers.ts)');
  process.exit(2);
}
if (doors.includes('gym' as never) && !gymPython) {
  console.error('BENCH_GYM_PYTHON: a Python with NeMo Gym (package `nemo_gym`), fastapi and uvicorn (see the header of bench/doors-peers.ts)');
  process.exit(2);
}

interface Target {
  name: string;
  door: 'ors' | 'gym';
  url: string;
  headers: Record<string, string>;
  clients: Client[];
  ms: number[];
  /** Time per step of a session, summed over the timed sessions. */
  steps: Record<string, number>;
}

interface Reply {
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

async function post(c: Client, path: string, headers: Record<string, string>, body: string | undefined, t?: Target, step?: string): Promise<Reply> {
  const t0 = performance.now();
  const res = await c.request({ method: 'POST', path, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  if (t && step) t.steps[step] = (t.steps[step] ?? 0) + performance.now() - t0;
  return { text, headers: res.headers };
}

const checkReward = (t: Target, reward: string | undefined, right: boolean, reply: string): void => {
  if (reward === undefined || Number(reward) !== (right ? 1 : 0)) throw new Error(`${t.name}: reward ${reward} for ${right ? 'a right' : 'a wrong'} answer: ${reply.slice(0, 300)}`);
};

let n = 0;
/** One ORS episode as the SDK's client plays it; the reward the submit's stream carries is checked. */
async function orsSession(t: Target, c: Client): Promise<void> {
  const k = ++n;
  const created = (await post(c, '/create_session', { ...t.headers, accept: 'text/event-stream' }, undefined, t, 'create_session')).text;
  const sid = /event: task_id\r?\ndata: (\S+)/.exec(created)?.[1];
  if (!sid) throw new Error(`${t.name}: no task_id in ${created.slice(0, 200)}`);
  const h = { ...t.headers, 'x-session-id': sid };
  await post(c, '/create', h, JSON.stringify({ env_name: 'bench', split: 'train', index: 0 }), t, 'create');
  const stream = { ...h, accept: 'text/event-stream' };
  await post(c, '/bench/call', stream, JSON.stringify({ name: 'noop', input: { q: String(k) } }), t, 'noop');
  const right = k % 2 === 0;
  const graded = (await post(c, '/bench/call', stream, JSON.stringify({ name: 'submit', input: { answer: right ? '42' : '41' } }), t, 'submit')).text;
  checkReward(t, /"reward":\s*([0-9.]+)/.exec(graded)?.[1], right, graded);
  await post(c, '/delete_session', h, undefined, t, 'delete_session');
}

/** The row as Gym's datasets carry it (Responses create params, the tool with `strict`, as its schema requires). */
const gymRow = {
  responses_create_params: { input: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', name: 'noop', parameters: { type: 'object', properties: {} }, strict: true }] },
  reference_answer: '42',
};
/** The model's response as Gym's agent passes it to /verify (a Responses API response). */
const gymResponse = (k: number, text: string) => ({
  id: `resp_${k}`,
  created_at: 0,
  model: 'bench',
  object: 'response',
  output: [
    { type: 'function_call', id: `fc_${k}`, call_id: `call_${k}`, name: 'noop', arguments: JSON.stringify({ q: String(k) }), status: 'completed' },
    { type: 'function_call_output', call_id: `call_${k}`, output: '"ok"' },
    { type: 'message', id: `msg_${k}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] },
  ],
  parallel_tool_calls: false,
  tool_choice: 'auto',
  tools: [],
});

/** One NeMo Gym rollout as its simple_agent plays it: seed (a cookie), one tool call, verify; the reward is checked. */
async function gymSession(t: Target, c: Client): Promise<void> {
  const k = ++n;
  const seeded = await post(c, '/seed_session', t.headers, JSON.stringify(gymRow), t, 'seed_session');
  const set = seeded.headers['set-cookie'];
  const cookie = (Array.isArray(set) ? set[0] : set)?.split(';')[0];
  if (!cookie) throw new Error(`${t.name}: no session cookie`);
  const h = { ...t.headers, cookie };
  await post(c, '/noop', h, JSON.stringify({ q: String(k) }), t, 'noop');
  const right = k % 2 === 0;
  const verified = (await post(c, '/verify', h, JSON.stringify({ ...gymRow, response: gymResponse(k, right ? '42' : '41') }), t, 'verify')).text;
  checkReward(t, /"reward":\s*([0-9.]+)/.exec(verified)?.[1], right, verified);
}

async function session(t: Target, c: Client): Promise<void> {
  const t0 = performance.now();
  await (t.door === 'ors' ? orsSession(t, c) : gymSession(t, c));
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

const servers: Server[] = [];
const make = (name: string, d: 'ors' | 'gym', url: string, headers: Record<string, string>): Target => ({ name, door: d, url, headers, clients: Array.from({ length: concurrency }, () => new Client(url)), ms: [], steps: {} });
/** Per door: [reference, door]. */
const pairs: [Target, Target][] = [];
const ours = await startServer('full:gym');
servers.push(ours);
const [mainUrl, gymUrl] = ours.url.split(' ') as [string, string];
if (doors.includes('ors' as never)) {
  const reference = await startUvicorn(orsPython!, 'ors_reference:app', `is the ORS python-sdk (ors), fastapi and uvicorn installed for ${orsPython}?`, { quiet: true });
  servers.push(reference);
  pairs.push([make('ORS reference server (python-sdk), no record', 'ors', reference.url, {}), make('ORS door, every call and the grade recorded', 'ors', mainUrl, { 'x-api-key': 'bench-key-0123456789abcdef' })]);
}
if (doors.includes('gym' as never)) {
  const reference = await startUvicorn(gymPython!, 'gym_reference:app', `is NeMo Gym (nemo_gym), fastapi and uvicorn installed for ${gymPython}?`, { quiet: true });
  servers.push(reference);
  pairs.push([make('NeMo Gym resources server (SimpleResourcesServer)', 'gym', reference.url, {}), make('NeMo Gym door, every call and the grade recorded', 'gym', gymUrl, {})]);
}
const targets = pairs.flat();
const loadBefore = loadavg();
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
  for (const s of servers) await stopServer(s);
}
console.log(`\nsessions at concurrency ${concurrency}: ${rounds} rounds x ${perRound} sessions per target, alternating, ${((performance.now() - started) / 1000).toFixed(0)} s; load before ${loadBefore.map((l) => l.toFixed(1)).join(' ')}, after ${loadavg().map((l) => l.toFixed(1)).join(' ')}\n`);
console.log('target                                            sessions/s  p50 ms   p99 ms   vs reference (sessions/s, p50)');
const rate = (t: Target) => (rounds * perRound) / (wall.get(t)! / 1000);
for (const [base, t] of pairs) {
  for (const x of [base, t]) {
    console.log(`${x.name.padEnd(48)}${fmt(rate(x), 0)}${fmt(pct(x.ms, 50), 2)}${fmt(pct(x.ms, 99), 2)}   ${(rate(x) / rate(base)).toFixed(2)}x, ${(pct(base.ms, 50) / pct(x.ms, 50)).toFixed(2)}x`);
  }
}
console.log('\nmean ms per step:');
for (const t of targets) console.log(`  ${t.name.split(',')[0]}: ${Object.entries(t.steps).map(([k, v]) => `${k} ${(v / t.ms.length).toFixed(2)}`).join(', ')}`);
for (const [base, t] of pairs) {
  const ratio = rate(t) / rate(base);
  console.log(`target: the ${t.door === 'ors' ? 'ORS' : 'NeMo Gym'} door at >= 1x its reference server (sessions/s): ${ratio.toFixed(2)}x, ${ratio >= 1 ? 'met' : 'NOT met'}`);
}
process.exit(0);
