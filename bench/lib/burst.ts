// What the burst benchmarks share (bench/burst.ts on bwrap, bench/docker.ts over engines): N new
// rollouts at once over HTTP, each making C `shell` calls in turn, every call checking its own
// output: an echo of its rollout and call, then the line count of a file the rollout appends to,
// which must equal the call's number.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { request, type Agent } from 'undici';

export interface BurstResult {
  wallMs: number;
  /** Per-call latencies, ms: each rollout's first call (it creates the sandbox) and the others. */
  first: number[];
  later: number[];
  errors: number;
  fivexx: number;
  s503: number;
  empty: number;
  wrong: number;
  /** A few of the failures, for the lab notes. */
  samples: string[];
  /** Every failure by kind: status and error code, or what the output says instead of the echo. */
  kinds: Record<string, number>;
}

const emptyResult = (): BurstResult => ({ wallMs: 0, first: [], later: [], errors: 0, fivexx: 0, s503: 0, empty: 0, wrong: 0, samples: [], kinds: {} });

/** `thinkMs`: the model's think time between a rollout's calls (bench/steps.ts; none by default). */
export async function runBurst(o: { url: string; key: string; dispatcher: Agent; rollouts: number; calls: number; tracePrefix: string; thinkMs?: number }): Promise<BurstResult> {
  const out = emptyResult();
  const note = (s: string): void => {
    if (out.samples.length < 3) out.samples.push(s);
  };
  const kind = (k: string): void => {
    out.kinds[k] = (out.kinds[k] ?? 0) + 1;
  };
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.rollouts }, async (_, r) => {
      for (let c = 1; c <= o.calls; c++) {
        if (c > 1 && o.thinkMs) await new Promise((r) => setTimeout(r, o.thinkMs));
        const t = performance.now();
        try {
          const res = await request(`${o.url}/tools`, {
            method: 'POST',
            dispatcher: o.dispatcher,
            headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              type: 'function_call', call_id: `c${c}`, name: 'shell', trace_id: `${o.tracePrefix}_${r}`, item: {},
              arguments: JSON.stringify({ command: `echo r${r} c${c}; echo x >> log; wc -l < log` }),
            }),
          });
          const text = await res.body.text();
          (c === 1 ? out.first : out.later).push(performance.now() - t);
          if (res.statusCode === 503) out.s503++;
          if (res.statusCode >= 500) out.fivexx++;
          else if (res.statusCode !== 200) out.errors++;
          if (res.statusCode !== 200) {
            note(`${res.statusCode} ${text.slice(0, 300)}`);
            kind(`${res.statusCode} ${/"code":"(\w+)"/.exec(text)?.[1] ?? '?'}`);
            continue;
          }
          const output = (JSON.parse(text) as { output?: string }).output ?? '';
          if (!output.includes('--- stdout ---')) {
            out.empty++;
            note(`empty: ${JSON.stringify(output.slice(0, 300))}`);
            kind(`200 without stdout: ${output.split('\n')[0]!.slice(0, 70)}`);
          }
          else if (!output.startsWith(`exit_code: 0\n--- stdout ---\nr${r} c${c}\n${c}\n`)) {
            out.wrong++;
            note(`wrong: ${JSON.stringify(output)}`);
            kind(output.includes('timed_out: true') ? '200 timed out' : '200 wrong output');
          }
        } catch (e) {
          out.errors++;
          note(String(e));
          kind(`request failed: ${(e as Error).message.slice(0, 60)}`);
        }
      }
    }),
  );
  out.wallMs = performance.now() - t0;
  return out;
}

/**
 * The floor of a burst's schedule: the same rollouts, calls, think time and command (each rollout in a
 * directory of its own), each call a bare `sh -c` spawned by this process: no server, no sandbox, no HTTP.
 * Outputs checked as runBurst checks them.
 */
export async function runBareSchedule(o: { rollouts: number; calls: number; thinkMs?: number }): Promise<BurstResult> {
  const out = emptyResult();
  const root = await mkdtemp(join(tmpdir(), 'rft-bare-schedule-'));
  const t0 = performance.now();
  try {
    await Promise.all(
      Array.from({ length: o.rollouts }, async (_, r) => {
        const dir = join(root, String(r));
        await mkdir(dir);
        for (let c = 1; c <= o.calls; c++) {
          if (c > 1 && o.thinkMs) await new Promise((res) => setTimeout(res, o.thinkMs));
          const t = performance.now();
          const got = await new Promise<string>((res) => execFile('/bin/sh', ['-c', `echo r${r} c${c}; echo x >> log; wc -l < log`], { cwd: dir }, (e, stdout) => res(e ? `error: ${e.message}` : stdout)));
          (c === 1 ? out.first : out.later).push(performance.now() - t);
          if (got !== `r${r} c${c}\n${c}\n`) {
            out.wrong++;
            out.kinds['wrong output'] = (out.kinds['wrong output'] ?? 0) + 1;
          }
        }
      }),
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  out.wallMs = performance.now() - t0;
  return out;
}

export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/** The burst's figures, as the lab notes quote them. */
export function burstLines(b: BurstResult): string[] {
  const fmt = (xs: number[]): string => `p50 ${pct(xs, 50).toFixed(1).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(1).padStart(7)} ms   max ${Math.max(...xs).toFixed(0)} ms (n=${xs.length})`;
  return [
    `wall ${(b.wallMs / 1000).toFixed(1)} s; errors ${b.errors}, 5xx ${b.fivexx} (503: ${b.s503}), empty outputs ${b.empty}, wrong outputs ${b.wrong}`,
    ...b.samples.map((s) => `  e.g. ${s}`),
    ...Object.entries(b.kinds).sort((x, y) => y[1] - x[1]).map(([k, n]) => `  ${String(n).padStart(5)} x ${k}`),
    `per call        ${fmt([...b.first, ...b.later])}`,
    `first calls     ${fmt(b.first)}`,
    `later calls     ${fmt(b.later)}`,
  ];
}
