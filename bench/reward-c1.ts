// Benchmark: the reward door one request at a time, as slime's remote_rm calls it (one sample per
// request, each rollout worker waiting for its reply), against a bare FastAPI reward server (bench/
// fastapi_reward.py: uvicorn, the same comparison, no record), same run. The door grades with
// bench/units/graders/reference_match (the response against the label: as trivial as FastAPI's);
// each grade is a new rollout, recorded, SQLite sync=full, answered once committed (its fsync not
// waited for: src/store/README.md, "Fsync policy"). For contrast, the same grader through Agent RFT's
// POST /graders/reference_match on the same server: a durable grade, answered once fsynced.
// Rounds alternate the targets (the order reversed every other round), each round N requests to each,
// one at a time on one keep-alive connection; p50/p99 over all rounds.
//
//   python3.11 -m venv /tmp/reward-venv && /tmp/reward-venv/bin/pip install fastapi uvicorn
//   BENCH_PYTHON=/tmp/reward-venv/bin/python node --conditions=rft-source --import tsx bench/reward-c1.ts [rounds] [per round]
//                                                                                  (default 10 rounds of 300)
import { loadavg } from 'node:os';
import { Client } from 'undici';
import { fmt, startServer, startUvicorn, stopServer } from './lib/load.js';

const python = process.env.BENCH_PYTHON;
if (!python) {
  console.error('BENCH_PYTHON: a Python with fastapi and uvicorn, e.g.\n  python3.11 -m venv /tmp/reward-venv && /tmp/reward-venv/bin/pip install fastapi uvicorn\n  BENCH_PYTHON=/tmp/reward-venv/bin/python node --conditions=rft-source --import tsx bench/reward-c1.ts');
  process.exit(2);
}
const rounds = Number(process.argv[2] ?? 10);
const perRound = Number(process.argv[3] ?? 300);


interface Target {
  name: string;
  client: Client;
  path: string;
  headers: Record<string, string>;
  body: (n: number) => string;
  expect: (reply: string, right: boolean) => boolean;
  ms: number[];
}

/** slime's request: a right answer on even n, a wrong one on odd n. */
const slimeBody = (n: number) => JSON.stringify({ prompt: 'What is six times seven?', response: n % 2 ? '41' : '42', label: '42' });
const scoreIs = (reply: string, right: boolean) => Number(reply) === (right ? 1 : 0);

let n = 0;
async function once(t: Target): Promise<void> {
  const k = ++n;
  const t0 = performance.now();
  const res = await t.client.request({ method: 'POST', path: t.path, headers: { 'content-type': 'application/json', ...t.headers }, body: t.body(k) });
  const text = await res.body.text();
  const ms = performance.now() - t0;
  if (res.statusCode !== 200 || !t.expect(text, k % 2 === 0)) throw new Error(`${t.name}: ${res.statusCode} ${text.slice(0, 200)}`);
  t.ms.push(ms);
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

const fastapi = await startUvicorn(python, 'fastapi_reward:app', `is fastapi installed for ${python}?`);
const ours = await startServer('full:private');
const [mainUrl, privateUrl] = ours.url.split(' ') as [string, string];
const loadBefore = loadavg();
const targets: Target[] = [
  { name: 'FastAPI + uvicorn reward server, no record', client: new Client(fastapi.url), path: '/reward', headers: {}, body: slimeBody, expect: scoreIs, ms: [] },
  { name: 'reward door, grade recorded (committed)', client: new Client(privateUrl), path: '/reward/reference_match', headers: {}, body: slimeBody, expect: scoreIs, ms: [] },
  {
    name: 'Agent RFT /graders, grade fsynced (durable)',
    client: new Client(mainUrl),
    path: '/graders/reference_match',
    headers: { authorization: 'Bearer bench-key-0123456789abcdef' },
    body: (k) => JSON.stringify({ sample: { output_text: k % 2 ? '41' : '42' }, item: { reference_answer: '42' }, trace_id: `trace_c1_${k}` }),
    expect: (reply, right) => (JSON.parse(reply) as { score: number }).score === (right ? 1 : 0),
    ms: [],
  },
];
try {
  for (const t of targets) for (let i = 0; i < 200; i++) await once(t); // warm-up
  for (const t of targets) t.ms.length = 0;
  for (let r = 0; r < rounds; r++) {
    for (const t of r % 2 ? [...targets].reverse() : targets) for (let i = 0; i < perRound; i++) await once(t);
  }
} finally {
  await Promise.all(targets.map((t) => t.client.close()));
  await stopServer(ours);
  await stopServer(fastapi);
}
const [base, door] = targets as [Target, Target, Target];
console.log(`\nreward, one request at a time: ${rounds} rounds x ${perRound} requests per target, alternating; load ${loadBefore.map((l) => l.toFixed(1)).join(' ')}\n`);
console.log('target                                          p50 ms   p99 ms  mean ms   vs FastAPI (p50)');
for (const t of targets) {
  const mean = t.ms.reduce((a, b) => a + b, 0) / t.ms.length;
  console.log(`${t.name.padEnd(44)}${fmt(pct(t.ms, 50), 3)}${fmt(pct(t.ms, 99), 3)}${fmt(mean, 3)}${fmt(pct(base.ms, 50) / pct(t.ms, 50), 2)}x`);
}
const ratio = pct(base.ms, 50) / pct(door.ms, 50);
console.log(`target: the reward door at >= 0.5x FastAPI one request at a time: ${ratio.toFixed(2)}x, ${ratio >= 0.5 ? 'met' : 'NOT met'}`);
process.exit(0);
