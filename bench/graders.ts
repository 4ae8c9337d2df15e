// Grades per second for OpenAI grader configs run locally: string_check (the baseline), every
// text_similarity metric, cosine against the fake OpenAI server on loopback, and a three-part
// multi, on 1 KB and 10 KB answers. Run: node --conditions=rft-source --import tsx bench/graders.ts [--seconds 0.5]
import { validateGraderConfig, type GraderConfig } from '../src/grading/config.js';
import { runGraderConfig, type RunOptions } from '../src/grading/run.js';
import { LOCAL_METRICS } from '../src/grading/similarity/index.js';
import { startFakeOpenAI } from '../test/helpers/fake-openai.js';

const secondsArg = process.argv.indexOf('--seconds');
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 0.5;

const WORDS = (
  'revenue quarter growth margin cash flow operating income segment guidance fiscal year ' +
  'the of and to in a is that for on with as by at from was were be this which increased ' +
  'decreased million billion percent compared prior period net loss profit costs sales'
).split(' ');

/** Deterministic English-like text of about `bytes` bytes (seeded LCG). */
function text(bytes: number, seed: number): string {
  let s = seed;
  const out: string[] = [];
  let len = 0;
  while (len < bytes) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const w = WORDS[s % WORDS.length] as string;
    out.push(w);
    len += w.length + 1;
  }
  return out.join(' ').slice(0, bytes);
}

/** The reference with about one word in five replaced: similar, not equal. */
function perturb(t: string, seed: number): string {
  let s = seed;
  return t
    .split(' ')
    .map((w) => {
      s = (s * 1103515245 + 12345) % 2 ** 31;
      return s % 5 === 0 ? (WORDS[(s >> 8) % WORDS.length] as string) : w;
    })
    .join(' ');
}

const cfg = (json: Record<string, unknown>): GraderConfig => validateGraderConfig(json);
const io = { input: '{{sample.output_text}}', reference: '{{item.reference_answer}}' };

async function measure(g: GraderConfig, answer: string, reference: string, opts: RunOptions): Promise<number> {
  const sample = { output_text: answer, output_json: null, output_tools: [] };
  const item = { reference_answer: reference };
  await runGraderConfig(g, sample, item, opts); // warm-up (JIT, connections)
  let n = 0;
  const start = performance.now();
  const until = start + SECONDS * 1000;
  while (performance.now() < until || n < 3) {
    await runGraderConfig(g, sample, item, opts);
    n++;
  }
  return n / ((performance.now() - start) / 1000);
}

const fake = await startFakeOpenAI();
const opts: RunOptions = { openai: { baseURL: fake.baseURL, apiKey: fake.apiKey, maxRetries: 0 } };

const graders: Array<[string, GraderConfig]> = [
  ['string_check eq', cfg({ type: 'string_check', name: 'sc', ...io, operation: 'eq' })],
  ...LOCAL_METRICS.map((m): [string, GraderConfig] => [`text_similarity ${m}`, cfg({ type: 'text_similarity', name: m, ...io, evaluation_metric: m })]),
  ['text_similarity cosine (fake API)', cfg({ type: 'text_similarity', name: 'cos', ...io, evaluation_metric: 'cosine' })],
  [
    'multi (string_check + fuzzy + rouge_l)',
    cfg({
      type: 'multi',
      name: 'combo',
      graders: {
        exact: { type: 'string_check', name: 'exact', ...io, operation: 'eq' },
        fuzzy: { type: 'text_similarity', name: 'fuzzy', ...io, evaluation_metric: 'fuzzy_match' },
        rouge: { type: 'text_similarity', name: 'rouge', ...io, evaluation_metric: 'rouge_l' },
      },
      calculate_output: '0.5 * exact + 0.25 * fuzzy + 0.25 * rouge',
    }),
  ],
];

const sizes = [1024, 10 * 1024];
const texts = sizes.map((b) => {
  const answer = text(b, 42);
  return { bytes: b, answer, reference: perturb(answer, 7) };
});

const rows: Array<{ grader: string; rates: number[] }> = [];
for (const [label, g] of graders) {
  const rates: number[] = [];
  for (const t of texts) rates.push(await measure(g, t.answer, t.reference, opts));
  rows.push({ grader: label, rates });
}
await fake.close();

const base = rows[0]?.rates ?? [];
const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
console.log(`grades/s, ${SECONDS}s per cell, node ${process.version}; ratio = rate / string_check rate at the same size`);
console.log('| grader | 1 KB grades/s | ratio | 10 KB grades/s | ratio |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const cells = r.rates.flatMap((x, i) => [fmt(x), (x / (base[i] ?? 1)).toFixed(4)]);
  console.log(`| ${r.grader} | ${cells.join(' | ')} |`);
}
