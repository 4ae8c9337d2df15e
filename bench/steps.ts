// Training steps over real HTTP against a server in its own process, on bwrap or Docker: each step starts M new
// rollouts at once, each making K `shell` calls with the model's think time between them (every call
// checks its own output, bench/lib/burst.ts), then a pause before the next step. Run twice against
// the same load: with the default settings (the warm pool learns the step) and with the learning
// off (RFT_SANDBOX_WARM_MAX_MB=0: the floor of RFT_SANDBOX_WARM only), and prints, per step, p50 and
// p99 per call, the first calls' p99, errors, 5xx, empty and wrong outputs, the server's peak RSS,
// the pool's hits and what it held when the step started; then the baseline's p99 over the learned.
// Also, same run, the step's schedule with each call a bare `sh -c` of the same command (no server, no
// sandbox: bench/lib/burst.ts runBareSchedule), the floor later steps are judged against.
// A rollout's sandbox goes when its TTL (10 s) passes after its last call, as a graded one would
// after its grace period, so a step never waits for the previous step's sandboxes at the cap; after the
// last step it prints how many rollouts' sandboxes were still live once the TTL had passed (0 expected).
// The server gets this process's RFT_* variables (then the run's own: the baseline's RFT_SANDBOX_WARM_MAX_MB=0).
// Run: node --conditions=rft-source --import tsx bench/steps.ts [rollouts=500] [calls=5] [think-ms=2000] [pause-ms=30000] [steps=3] [--driver=bwrap|docker] [--learned-only]
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { pct, runBareSchedule, runBurst, type BurstResult } from './lib/burst.js';
import { metrics, rss, sumOf } from './lib/server-stats.js';
import { spawnServer } from '../test/helpers/child-server.js';
import { repoRoot } from '../test/helpers/server.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const rollouts = Number(args[0] ?? 500);
const calls = Number(args[1] ?? 5);
const thinkMs = Number(args[2] ?? 2_000);
const pauseMs = Number(args[3] ?? 30_000);
const steps = Number(args[4] ?? 3);
const driver = /^--driver=(\w+)$/.exec(process.argv.find((a) => a.startsWith('--driver=')) ?? '')?.[1] ?? 'bwrap';
/** --learned-only: skip the baseline run (trying a change to the learning). */
const learnedOnly = process.argv.includes('--learned-only');
const KEY = 'bench-steps-key-0123456789abcdef';
const TTL_MS = 10_000;

interface Step {
  burst: BurstResult;
  peakRss: number;
  /** Prepared sandboxes when the step started, and the step's new sandboxes served from them. */
  warmAtStart: number;
  hits: number;
  misses: number;
  /** Server-side means, ms: a new sandbox's creation (a hit: its files and record), and a call's tool time. */
  createMs: number;
  toolMs: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function run(label: string, env: Record<string, string>): Promise<{ steps: Step[]; idleRss: number; predicted: number; leftAfterTtl: number }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'rft-bench-steps-'));
  const srv = await spawnServer(
    {
      RFT_DATA_DIR: dataDir, RFT_API_KEYS: `b:${KEY}`, RFT_RATE_LIMIT: '0', RFT_SANDBOX: driver, RFT_SANDBOX_TTL_MS: String(TTL_MS),
      RFT_TOOLS_DIR: join(repoRoot, 'tools'), RFT_GRADERS_DIR: join(repoRoot, 'graders'), RFT_LOG_LEVEL: 'error',
      // RFT_* of this process's environment are the server's too (e.g. RFT_SANDBOX_WARM_MAX_MB for a pool that holds a Docker step)
      ...Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('RFT_') && e[1] !== undefined)),
      ...env,
    },
    120_000,
  );
  const pid = srv.proc.pid!;
  const dispatcher = new Agent({ connections: rollouts, headersTimeout: 0, bodyTimeout: 0 });
  const out: Step[] = [];
  let idleRss = 0;
  let predicted = 0;
  let leftAfterTtl = -1;
  try {
    // The supervisor starts with the first sandbox (a warm-up rollout, not counted).
    await request(`${srv.url}/tools`, {
      method: 'POST', dispatcher, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'function_call', call_id: 'w', name: 'shell', arguments: JSON.stringify({ command: 'true' }), trace_id: 'trace_warmup', item: {} }),
    }).then((r) => r.body.text());
    await sleep(Math.min(pauseMs, 5_000));
    for (let s = 1; s <= steps; s++) {
      const before = await metrics(srv.url, KEY);
      let peak = await rss(pid);
      const sampler = setInterval(() => void rss(pid).then((v) => (peak = Math.max(peak, v))), 100);
      const burst = await runBurst({ url: srv.url, key: KEY, dispatcher, rollouts, calls, thinkMs, tracePrefix: `trace_${label}_s${s}` });
      clearInterval(sampler);
      const after = await metrics(srv.url, KEY);
      const d = (name: string): number => sumOf(after, name) - sumOf(before, name);
      out.push({
        burst, peakRss: peak, warmAtStart: sumOf(before, 'rft_sandbox_pool{state="warm"}'),
        hits: d('rft_sandbox_pool_takes_total{outcome="hit"}'), misses: d('rft_sandbox_pool_takes_total{outcome="miss"}'),
        createMs: (d('rft_sandbox_create_duration_seconds_sum') / d('rft_sandbox_create_duration_seconds_count')) * 1000,
        toolMs: (d('rft_tool_call_duration_seconds_sum{tool="shell"}') / all(burst).length) * 1000,
      });
      console.log(`  [${label}] step ${s}: ${line(out.at(-1)!)}`);
      if (s < steps) await sleep(pauseMs);
    }
    // The pool as training left it (full, until its idle timeout): the server's RSS then.
    await sleep(Math.min(pauseMs, 10_000));
    idleRss = await rss(pid);
    predicted = sumOf(await metrics(srv.url, KEY), 'rft_sandbox_pool_predicted_step');
    // Every rollout's sandbox gone once its TTL passed (the sweeper runs every TTL/4): live ones hold
    // a slot; the pool's prepared ones do not and are not counted.
    await sleep(Math.max(0, TTL_MS + TTL_MS / 4 + 2_000 - Math.min(pauseMs, 10_000)));
    leftAfterTtl = sumOf(await metrics(srv.url, KEY), 'rft_sandboxes{state="live"}');
  } finally {
    await srv.stop();
    await dispatcher.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  return { steps: out, idleRss, predicted, leftAfterTtl };
}

const all = (b: BurstResult): number[] => [...b.first, ...b.later];
const ms = (x: number): string => `${(x / 1000).toFixed(2).padStart(6)} s`;
function line(s: Step): string {
  const b = s.burst;
  return (
    `per call p50 ${ms(pct(all(b), 50))} p99 ${ms(pct(all(b), 99))}, first calls p99 ${ms(pct(b.first, 99))}; ` +
    `errors ${b.errors}, 5xx ${b.fivexx}, empty ${b.empty}, wrong ${b.wrong}; peak RSS ${(s.peakRss / 2 ** 20).toFixed(0)} MB; ` +
    `pool ${s.warmAtStart} warm at start, ${s.hits} hits / ${s.misses} misses; server means: creation ${s.createMs.toFixed(0)} ms, tool ${s.toolMs.toFixed(0)} ms/call`
  );
}

const load = (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
console.log(
  `steps bench: ${steps} steps of ${rollouts} new rollouts x ${calls} shell calls, think ${thinkMs} ms, pause ${pauseMs} ms, ${driver}; load average before ${load}`,
);
const learned = await run('learned', {});
// The same-run floor of a step (issue 41: steps 2-3 against bare spawns of the same command): the same schedule
// with each call a bare spawn, twice (the first warms the page cache as step 1 does the server's).
const bare: BurstResult[] = [];
for (let i = 0; i < 2; i++) {
  bare.push(await runBareSchedule({ rollouts, calls, thinkMs }));
  const b = bare.at(-1)!;
  console.log(`  [bare spawns] schedule ${i + 1}: per call p50 ${ms(pct(all(b), 50))} p99 ${ms(pct(all(b), 99))}, first calls p99 ${ms(pct(b.first, 99))}; wrong ${b.wrong}`);
  await sleep(Math.min(pauseMs, 5_000));
}
const bareP99 = pct(all(bare[1]!), 99);
for (let i = 1; i < steps; i++) {
  const p = pct(all(learned.steps[i]!.burst), 99);
  console.log(`step ${i + 1} (learned) p99 ${ms(p)} against the bare schedule's ${ms(bareP99)}: x${(p / bareP99).toFixed(2)}`);
}
if (learnedOnly) {
  console.log(`rollouts' sandboxes left after the TTL: ${learned.leftAfterTtl}`);
  process.exit(0);
}
const baseline = await run('floor only', { RFT_SANDBOX_WARM_MAX_MB: '0' });
console.log('');
console.log(`learned pool: predicted step ${learned.predicted}; server RSS with the pool full, idle ${(learned.idleRss / 2 ** 20).toFixed(0)} MB (floor only: ${(baseline.idleRss / 2 ** 20).toFixed(0)} MB)`);
console.log(`rollouts' sandboxes left after the TTL: ${learned.leftAfterTtl} (floor only: ${baseline.leftAfterTtl})`);
console.log('step | learned p50 / p99 / first p99 | floor only p50 / p99 / first p99 | p99 floor/learned');
for (let i = 0; i < steps; i++) {
  const a = learned.steps[i]!.burst;
  const b = baseline.steps[i]!.burst;
  const row = (x: BurstResult): string => `${ms(pct(all(x), 50))} / ${ms(pct(all(x), 99))} / ${ms(pct(x.first, 99))}`;
  console.log(`${String(i + 1).padStart(4)} | ${row(a)} | ${row(b)} | x${(pct(all(b), 99) / pct(all(a), 99)).toFixed(2)}`);
}
