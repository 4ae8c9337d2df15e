// Soak: the server (CLI `serve`, bwrap sandboxes, SQLite sync=full) under a steady 50 requests/s
// of rollouts (tool calls, sandbox calls, a grade each) for an hour, or 10 minutes with --quick.
// Each minute: the server's RSS, heap after a full GC, open file descriptors and live sandboxes.
// Prints a table and whether each stayed flat within its bound, and writes the samples as CSV and
// a plot (SVG) under bench/results/.
//
//   node --import tsx bench/soak.ts [--quick] [--minutes N] [--rate 50] [--sandbox bwrap|process|none]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { repoRoot } from '../test/helpers/server.js';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
};
const quick = process.argv.includes('--quick');
const minutes = Number(arg('minutes', quick ? '10' : '60'));
const rate = Number(arg('rate', '50'));
const sandbox = arg('sandbox', 'bwrap');
const sampleMs = Number(arg('sample-seconds', '60')) * 1000;

/** Growth allowed from the first half of the run (after its first sample) to the second. */
const BOUNDS = { rssMb: 48, heapMb: 16, fileFds: 8, fds: 128, sandboxes: 40 };
const KEY = 'soak-key-0123456789abcdef';
const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

const work = mkdtempSync(join(tmpdir(), 'rft-soak-'));
const env = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '/tmp',
  HOST: '127.0.0.1',
  PORT: '0',
  RFT_LOG_LEVEL: 'warn',
  RFT_DATA_DIR: join(work, 'data'),
  RFT_API_KEYS: `soak:${KEY}`,
  RFT_TOOLS_DIR: join(import.meta.dirname, 'units', 'kill-tools'),
  RFT_GRADERS_DIR: join(import.meta.dirname, 'units', 'graders'),
  RFT_SANDBOX: sandbox,
  // A graded rollout's sandbox goes soon after its grade (the trainer's grader retries come within seconds).
  RFT_SANDBOX_GRACE_MS: '5000',
  RFT_RATE_LIMIT: '0',
  BENCH_EFFECTS_FILE: join(work, 'effects.jsonl'),
};

async function startServer(): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(
    process.execPath,
    ['--expose-gc', '--conditions=rft-source', '--import', 'tsx', '--import', join(import.meta.dirname, 'lib', 'soak-probe.ts'), join(repoRoot, 'src/cli/main.ts'), 'serve'],
    { cwd: repoRoot, env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
  );
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /listening on (http\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    proc.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${err}`)));
  });
  return { url, proc };
}

interface Sample {
  minute: number;
  rssMb: number;
  heapMb: number;
  /** Every open descriptor: files, pipes, and the sockets of requests in flight (they follow latency). */
  fds: number;
  /** Descriptors that are not sockets: a leak of files or pipes shows here. */
  fileFds: number;
  sandboxes: number;
  requests: number;
  errors: number;
  p99Ms: number;
}

const server = await startServer();
const dispatcher = new Agent({ connections: 256 });
let sent = 0;
let errors = 0;
let latencies: number[] = [];
const statuses: Record<number, number> = {};
/** What each failure was: status and code, or why no reply came. */
const failures: Record<string, number> = {};

async function post(path: string, body: unknown): Promise<void> {
  const t0 = performance.now();
  try {
    const res = await request(`${server.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body), dispatcher });
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    if (res.statusCode >= 500) {
      errors++;
      const code = ((await res.body.json().catch(() => ({}))) as { error?: { code?: string } }).error?.code;
      failures[`${res.statusCode} ${code ?? '?'}`] = (failures[`${res.statusCode} ${code ?? '?'}`] ?? 0) + 1;
    } else await res.body.dump();
  } catch (e) {
    errors++;
    const what = `no reply: ${(e as { code?: string }).code ?? (e as Error).message}`;
    failures[what] = (failures[what] ?? 0) + 1;
  }
  latencies.push(performance.now() - t0);
}

// Rollouts in 20 slots, one step of one slot per tick: tool calls, in 3 of 10 rollouts a sandbox
// call, then the grade; the next rollout takes the slot.
const row = { reference_answer: '42', tool_budget: 20, question: 'What is the answer?' };
let rolloutNo = 0;
const newPlan = () => {
  rolloutNo++;
  const steps: string[] = ['count', 'count', 'count', 'count'];
  if (rolloutNo % 10 < 3) steps.splice(2, 0, 'sbx', 'sbx');
  return { trace: `trace_soak_${rolloutNo}`, steps: [...steps, 'grade'], n: 0 };
};
const slots = Array.from({ length: 20 }, newPlan);
let slot = 0;
function step(): void {
  const s = slots[slot]!;
  slot = (slot + 1) % slots.length;
  const what = s.steps[s.n++]!;
  if (what === 'grade') {
    void post('/graders/reference_match', { sample: { output_text: s.n % 2 ? '42' : '41' }, item: row, trace_id: s.trace });
    slots[slots.indexOf(s)] = newPlan();
    return;
  }
  void post('/tools', { type: 'function_call', id: `fc_${s.n}`, call_id: `call_${s.n}`, name: what, arguments: what === 'count' ? '{"delay_ms":5}' : '{}', trace_id: s.trace, item: row });
}

function fdCounts(pid: number): { fds: number; fileFds: number } {
  let fds = 0;
  let fileFds = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    fds++;
    try {
      if (!readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) fileFds++;
    } catch {
      // closed meanwhile
    }
  }
  return { fds, fileFds };
}

async function sample(minute: number): Promise<Sample> {
  const mem = await new Promise<{ heapUsed: number; rss: number }>((resolve) => {
    server.proc.once('message', (m) => resolve(m as { heapUsed: number; rss: number }));
    server.proc.send('sample');
  });
  const ready = await request(`${server.url}/readyz`, { dispatcher });
  const body = (await ready.body.json()) as { sandboxes: { live: number } | null };
  const sorted = latencies.sort((a, b) => a - b);
  const s: Sample = {
    minute,
    rssMb: mem.rss / 2 ** 20,
    heapMb: mem.heapUsed / 2 ** 20,
    ...fdCounts(server.proc.pid!),
    sandboxes: body.sandboxes?.live ?? 0,
    requests: sent,
    errors,
    p99Ms: sorted[Math.floor(sorted.length * 0.99)] ?? 0,
  };
  latencies = [];
  return s;
}

const samples: Sample[] = [];
const t0 = performance.now();
const end = t0 + minutes * 60_000;
let nextSample = t0 + sampleMs;
console.log(`soak: ${minutes} min at ${rate} req/s, sandbox ${sandbox}, server ${server.url}`);
console.log('  min   rss MB  heap MB   fds  file fds  sandboxes  requests  5xx/err  p99 ms');
const print = (s: Sample) =>
  console.log(
    `${s.minute.toFixed(1).padStart(5)} ${s.rssMb.toFixed(1).padStart(8)} ${s.heapMb.toFixed(1).padStart(8)} ${String(s.fds).padStart(5)} ${String(s.fileFds).padStart(9)} ${String(s.sandboxes).padStart(10)} ${String(s.requests).padStart(9)} ${String(s.errors).padStart(8)} ${s.p99Ms.toFixed(1).padStart(7)}`,
  );
// A steady rate: each tick sends what is due by now, so a slow tick does not lower the rate.
while (performance.now() < end) {
  const due = Math.floor(((performance.now() - t0) / 1000) * rate);
  while (sent < due) {
    sent++;
    step();
  }
  if (performance.now() >= nextSample) {
    const s = await sample((performance.now() - t0) / 60_000);
    samples.push(s);
    print(s);
    nextSample += sampleMs;
  }
  await new Promise((r) => setTimeout(r, 5));
}
await new Promise((r) => setTimeout(r, 2000));

// Flat: the second half's largest value within BOUNDS of the first half's (the first sample, the
// warm-up, left out), so a level reached early (sockets and sandboxes of requests in flight follow
// the latency) passes and a trend (a leak) does not.
const mid = Math.max(2, Math.floor(samples.length / 2));
const firstHalf = samples.slice(1, mid);
const secondHalf = samples.slice(mid);
const verdicts = (Object.keys(BOUNDS) as (keyof typeof BOUNDS)[]).map((k) => {
  const growth = Math.max(...secondHalf.map((s) => s[k])) - Math.max(...firstHalf.map((s) => s[k]));
  return { k, growth, ok: growth <= BOUNDS[k] };
});
console.log(`\n${sent} requests in ${((performance.now() - t0) / 1000).toFixed(0)} s, statuses ${JSON.stringify(statuses)}`);
if (errors > 0) console.log(`failures: ${JSON.stringify(failures)}`);
for (const v of verdicts) console.log(`${v.k}: grew ${v.growth.toFixed(1)} (bound ${BOUNDS[v.k]}) ${v.ok ? 'flat' : 'NOT flat'}`);

const outDir = join(import.meta.dirname, 'results');
mkdirSync(outDir, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const keys = ['minute', 'rssMb', 'heapMb', 'fds', 'fileFds', 'sandboxes', 'requests', 'errors', 'p99Ms'] as const;
writeFileSync(join(outDir, `soak-${stamp}.csv`), [keys.join(','), ...samples.map((s) => keys.map((k) => s[k]).join(','))].join('\n') + '\n');
writeFileSync(join(outDir, `soak-${stamp}.svg`), plot(samples));
console.log(`samples: bench/results/soak-${stamp}.csv, plot: bench/results/soak-${stamp}.svg`);

server.proc.kill('SIGTERM');
await new Promise((r) => server.proc.once('exit', r));
rmSync(work, { recursive: true, force: true });
await dispatcher.close();
process.exit(verdicts.every((v) => v.ok) && errors === 0 ? 0 : 1);

/** Four small line charts (RSS, heap, fds, live sandboxes) against minutes, each from 0 to its max. */
function plot(s: Sample[]): string {
  const W = 360;
  const H = 160;
  const pad = 36;
  const series: [keyof Sample, string][] = [['rssMb', 'RSS (MB)'], ['heapMb', 'heap after GC (MB)'], ['fds', 'open fds (all / not sockets)'], ['sandboxes', 'live sandboxes']];
  const maxMin = Math.max(1, ...s.map((x) => x.minute));
  const label = maxMin.toFixed(0);
  const panels = series.map(([k, title], i) => {
    const ox = (i % 2) * (W + 20);
    const oy = Math.floor(i / 2) * (H + 30);
    const top = Math.max(1, ...s.map((x) => x[k])) * 1.1;
    const px = (m: number) => ox + pad + (m / maxMin) * (W - pad - 10);
    const py = (v: number) => oy + H - 20 - (v / top) * (H - 40);
    const line = (key: keyof Sample, color: string) =>
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${s.map((x) => `${px(x.minute).toFixed(1)},${py(x[key]).toFixed(1)}`).join(' ')}"/>`;
    return [
      `<text x="${ox + pad}" y="${oy + 14}" font-size="12">${title}</text>`,
      `<line x1="${ox + pad}" y1="${py(0)}" x2="${ox + W - 10}" y2="${py(0)}" stroke="#999"/>`,
      `<line x1="${ox + pad}" y1="${py(0)}" x2="${ox + pad}" y2="${oy + 20}" stroke="#999"/>`,
      `<text x="${ox + 2}" y="${py(top / 1.1) + 4}" font-size="10">${(top / 1.1).toFixed(0)}</text>`,
      `<text x="${ox + 2}" y="${py(0) + 4}" font-size="10">0</text>`,
      `<text x="${ox + W - 40}" y="${py(0) + 14}" font-size="10">${label} min</text>`,
      line(k, '#1f77b4'),
      ...(k === 'fds' ? [line('fileFds', '#ff7f0e')] : []),
    ].join('\n');
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W + 20}" height="${2 * (H + 30)}" font-family="sans-serif">\n${panels.join('\n')}\n</svg>\n`;
}
