// `check-grader`: probes a grader before a training run spends money on it. It builds the real app
// in-process (own temp data dir and key) and grades through the same route the trainer calls,
// with a fresh trace id per probe, for each dataset row:
//   (a) no-op: an empty answer with no tool calls must score about 0 (reward hacking guard);
//   (b) reference: the row's reference answer should score about 1;
//   (c) repeatable: the same sample (the reference, else the no-op) graded again gives the same score;
//   (d) continuity: near-miss answers (digits, words, units changed) get several distinct scores,
//       so the grader gives partial credit the trainer can climb.
// Exits 1 when a check fails its threshold. With --from-export, the rows are recorded rollouts and
// every probe but the no-op carries the record's tool calls (check-grader-export.ts).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { errors } from '../errors.js';
import type { RolloutJson } from './replay/source.js';
import { renderTable, type Cell } from './report/table.js';
import { jsonOrNull } from '../protocol/json-or-null.js';

export interface CheckThresholds {
  /** (a) highest acceptable no-op score. */
  noopMax: number;
  /** (b) lowest acceptable reference score. */
  referenceMin: number;
  /** (c) largest acceptable spread between repeats. */
  spreadMax: number;
  /** (d) fewest distinct scores over the reference and its perturbations. */
  minDistinct: number;
}

export const DEFAULT_THRESHOLDS: CheckThresholds = { noopMax: 0.05, referenceMin: 0.9, spreadMax: 1e-6, minDistinct: 3 };

export interface CheckGraderOptions {
  /** Dataset rows to probe; or fromExport: recorded rollouts, probed with their tool calls. */
  dataset?: string;
  fromExport?: string;
  grader: string;
  repeats?: number;
  referenceField?: string;
  limit?: number;
  /** Rows probed at the same time (default 4); probes within a row stay sequential. */
  concurrency?: number;
  thresholds?: Partial<CheckThresholds>;
  /** Environment the app is configured from (default: the process environment). */
  env?: Record<string, string | undefined>;
}

export interface RowReport {
  /** The dataset row, counted from 0 as every command counts rows. */
  row: number;
  noop: { score: number | null; error?: string; pass: boolean };
  reference: { score: number | null; error?: string; pass: boolean } | null;
  repeat: { scores: number[]; spread: number | null; pass: boolean } | null;
  continuity: { probes: Array<{ kind: string; what: string; score: number | null }>; distinct: number; pass: boolean } | null;
}

export interface CheckReport {
  grader: string;
  dataset: string;
  /** The item field the reference answer is read from; a row without it skips checks (b) and (d). */
  referenceField: string;
  thresholds: CheckThresholds;
  rows: RowReport[];
  summary: Record<'noop' | 'reference' | 'repeat' | 'continuity', { passed: number; failed: number; skipped: number }>;
  passed: boolean;
}

type Probe = { score: number | null; error?: string };

function referenceText(item: Record<string, unknown>, field: string): string | null {
  const v = item[field];
  if (v === undefined || v === null) return null;
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
}

function sampleOf(text: string, tools: unknown[]) {
  return {
    output_text: text,
    output_json: text === '' ? null : jsonOrNull(text),
    output_tools: tools,
    choices: [{ index: 0, message: { role: 'assistant', content: text, tool_calls: [] }, finish_reason: 'stop' }],
  };
}

export async function runCheckGrader(opts: CheckGraderOptions): Promise<CheckReport> {
  const thresholds = { ...DEFAULT_THRESHOLDS, ...opts.thresholds };
  const repeats = opts.repeats ?? 2;
  if (!Number.isInteger(repeats) || repeats < 2) throw errors.cliUsage('--repeats must be an integer >= 2');
  if (opts.concurrency !== undefined && (!Number.isInteger(opts.concurrency) || opts.concurrency < 1)) {
    throw errors.cliUsage('--concurrency must be an integer >= 1');
  }
  if ((opts.dataset === undefined) === (opts.fromExport === undefined)) throw errors.cliUsage('check-grader needs one of --dataset or --from-export');
  const field = opts.referenceField ?? 'reference_answer';
  // Imported here, not at the top, so the CLI's --help does not load the server.
  const [{ buildApp }, { loadConfig }, { perturbations }, { readDataset }, fromExport] = await Promise.all([
    import('../app.js'),
    import('../config.js'),
    import('../grading/perturb.js'),
    import('./rollout/dataset.js'),
    import('./check-grader-export.js'),
  ]);
  const source: { item: Record<string, unknown>; record?: RolloutJson }[] = opts.fromExport
    ? fromExport.trajectoriesFromExport(opts.fromExport)
    : readDataset(opts.dataset!).map((row) => ({ item: row as Record<string, unknown> }));
  const rows = source.slice(0, opts.limit ?? Infinity);
  const dataDir = mkdtempSync(join(tmpdir(), 'rft-check-grader-'));
  const key = randomBytes(18).toString('base64url');
  // Probes come from this process only, so the trainer-facing rate limit would only slow them down.
  const overrides = { RFT_DATA_DIR: dataDir, RFT_API_KEYS: `check:${key}`, RFT_RATE_LIMIT: '0' };
  const app = await buildApp(loadConfig(opts.env, { overrides }), { logger: false });
  try {
    if (!app.rft.registry.graders.has(opts.grader)) throw errors.unknownGrader(opts.grader, [...app.rft.registry.graders.keys()]);
    const inject = (req: { method: 'POST'; url: string; payload: Record<string, unknown> }) => app.inject({ ...req, headers: { authorization: `Bearer ${key}` } });
    // A probe of a recorded rollout is graded under a copy of its calls; any other on an empty trace.
    const grade = async (item: Record<string, unknown>, text: string, record?: RolloutJson): Promise<Probe> => {
      const traceId = record ? await fromExport.seedTrace(inject, record) : `trace_${randomUUID()}`;
      const res = await inject({
        method: 'POST',
        url: `/graders/${encodeURIComponent(opts.grader)}`,
        payload: { sample: sampleOf(text, record ? fromExport.outputToolsOf(record) : []), item, trace_id: traceId },
      });
      const body = res.json() as { score?: unknown; error?: { code?: string; message?: string } };
      if (res.statusCode === 200 && typeof body.score === 'number') return { score: body.score };
      return { score: null, error: `${res.statusCode} ${body.error?.code ?? ''} ${body.error?.message ?? res.body.slice(0, 200)}`.trim() };
    };

    const checkRow = async ({ item, record }: (typeof rows)[number], i: number): Promise<RowReport> => {
      const noop = await grade(item, '');
      const report: RowReport = {
        row: i,
        noop: { ...noop, pass: noop.score !== null && noop.score <= thresholds.noopMax },
        reference: null,
        repeat: null,
        continuity: null,
      };
      const ref = referenceText(item, field);
      // Repeatability is checked on the reference answer, or on the no-op answer for rows without one.
      const repeatOf = async (text: string, first: { score: number | null }) => {
        const scores = [first];
        for (let r = 1; r < repeats; r++) scores.push(await grade(item, text, text === '' ? undefined : record));
        const ok = scores.every((s) => s.score !== null);
        const values = scores.map((s) => s.score ?? Number.NaN);
        const spread = ok ? Math.max(...values) - Math.min(...values) : null;
        report.repeat = { scores: values, spread, pass: spread !== null && spread <= thresholds.spreadMax };
      };
      if (ref === null) await repeatOf('', noop);
      if (ref !== null) {
        const first = await grade(item, ref, record);
        report.reference = { ...first, pass: first.score !== null && first.score >= thresholds.referenceMin };
        await repeatOf(ref, first);
        const probes: Array<{ kind: string; what: string; score: number | null }> = [];
        for (const p of perturbations(ref)) probes.push({ kind: p.kind, what: p.what, score: (await grade(item, p.text, record)).score });
        const distinct = new Set(
          [first.score, ...probes.map((p) => p.score)].filter((s): s is number => s !== null).map((s) => s.toFixed(9)),
        ).size;
        report.continuity = { probes, distinct, pass: distinct >= thresholds.minDistinct };
      }
      return report;
    };
    const reports: RowReport[] = new Array(rows.length);
    // A few rows at a time (the emulator's rollout-pool does the same for rollouts; not shared
    // because it is not committed yet).
    let next = 0;
    const worker = async () => {
      while (next < rows.length) {
        const i = next++;
        reports[i] = await checkRow(rows[i] as (typeof rows)[number], i);
      }
    };
    await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 4, rows.length) }, worker));
    const tally = (pick: (r: RowReport) => { pass: boolean } | null) => ({
      passed: reports.filter((r) => pick(r)?.pass === true).length,
      failed: reports.filter((r) => pick(r)?.pass === false).length,
      skipped: reports.filter((r) => pick(r) === null).length,
    });
    const summary = {
      noop: tally((r) => r.noop),
      reference: tally((r) => r.reference),
      repeat: tally((r) => r.repeat),
      continuity: tally((r) => r.continuity),
    };
    return {
      grader: opts.grader,
      dataset: opts.dataset ?? opts.fromExport!,
      referenceField: field,
      thresholds,
      rows: reports,
      summary,
      passed: Object.values(summary).every((s) => s.failed === 0),
    };
  } finally {
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const verdict = (p: { pass: boolean } | null): Cell => (p === null ? 'skipped' : p.pass ? 'ok' : 'FAIL');

export function renderCheckReport(r: CheckReport): string {
  const t = r.thresholds;
  // Only a row without the reference field skips a check: (b) and (d) need the reference answer.
  const noReference = `no item.${r.referenceField}`;
  const sections = [
    `(a) no-op answer scores <= ${t.noopMax}`,
    renderTable(['row', 'score', 'result'], r.rows.map((x) => [x.row, x.noop.score, verdict(x.noop)])),
    `(b) reference answer scores >= ${t.referenceMin}`,
    renderTable(['row', 'score', 'result'], r.rows.map((x) => [x.row, x.reference?.score ?? null, verdict(x.reference)])),
    `(c) same sample, same score (spread <= ${t.spreadMax})`,
    renderTable(
      ['row', 'min', 'max', 'spread', 'result'],
      r.rows.map((x) => {
        const s = x.repeat?.scores.filter((v) => !Number.isNaN(v)) ?? [];
        return [x.row, s.length ? Math.min(...s) : null, s.length ? Math.max(...s) : null, x.repeat?.spread ?? null, verdict(x.repeat)];
      }),
    ),
    `(d) continuity: distinct scores over the reference and its near misses (>= ${t.minDistinct})`,
    renderTable(
      ['row', 'probes', 'distinct', 'result'],
      r.rows.map((x) => [x.row, x.continuity ? x.continuity.probes.length + 1 : null, x.continuity?.distinct ?? null, verdict(x.continuity)]),
    ),
  ];
  const errorsSeen = r.rows.flatMap((x) => [x.noop.error, x.reference?.error].filter((e): e is string => !!e).map((e) => `row ${x.row}: ${e}`));
  const s = r.summary;
  const line = (k: keyof typeof s) => `${k} ${s[k].passed} ok, ${s[k].failed} failed, ${s[k].skipped} skipped${s[k].skipped > 0 ? ` (${noReference})` : ''}`;
  const why =
    s.reference.skipped > 0
      ? [`${s.reference.skipped} of ${r.rows.length} rows have no item.${r.referenceField}, so their reference and continuity checks were skipped: --reference-field names the item field that holds the reference answer`]
      : [];
  return [
    ...sections.flatMap((x, i) => (i % 2 === 0 ? ['', x] : [x])),
    '',
    ...errorsSeen.slice(0, 20),
    ...why,
    `${r.passed ? 'PASS' : 'FAIL'}: ${line('noop')}; ${line('reference')}; ${line('repeat')}; ${line('continuity')}`,
    '',
  ].join('\n');
}

function num(flag: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n)) throw errors.cliUsage(`${flag} expects a number, got "${v}"`);
    return n;
  };
}

export function register(program: Command): void {
  program
    .command('check-grader')
    .description('probe a grader: no-op scores ~0, reference ~1, repeatable, partial credit on near misses')
    .option('--dataset <file>', 'dataset JSONL (Agent RFT rows)')
    .option('--from-export <file>', "instead of --dataset: rollouts `export` wrote; each probe but the no-op carries the record's tool calls (in the rollout and the sample)")
    .requiredOption('--grader <name>', 'grader name as served at /graders/<name>')
    .option('--json <out>', 'write the full report as JSON')
    .option('--repeats <n>', 'gradings of the same sample for the repeatability check', num('--repeats'), 2)
    .option('--reference-field <field>', 'item field holding the reference answer', 'reference_answer')
    .option('--limit <n>', 'only the first n rows', num('--limit'))
    .option('--concurrency <n>', 'rows probed at the same time', num('--concurrency'), 4)
    .option('--noop-max <x>', 'highest acceptable no-op score', num('--noop-max'), DEFAULT_THRESHOLDS.noopMax)
    .option('--reference-min <x>', 'lowest acceptable reference score', num('--reference-min'), DEFAULT_THRESHOLDS.referenceMin)
    .option('--spread-max <x>', 'largest acceptable spread between repeats', num('--spread-max'), DEFAULT_THRESHOLDS.spreadMax)
    .option('--min-distinct <n>', 'fewest distinct scores over near misses', num('--min-distinct'), DEFAULT_THRESHOLDS.minDistinct)
    .action(async (o: Record<string, unknown>) => {
      const report = await runCheckGrader({
        ...(typeof o.dataset === 'string' ? { dataset: o.dataset } : {}),
        ...(typeof o.fromExport === 'string' ? { fromExport: o.fromExport } : {}),
        grader: String(o.grader),
        repeats: o.repeats as number,
        referenceField: String(o.referenceField),
        ...(o.limit !== undefined ? { limit: o.limit as number } : {}),
        concurrency: o.concurrency as number,
        thresholds: {
          noopMax: o.noopMax as number,
          referenceMin: o.referenceMin as number,
          spreadMax: o.spreadMax as number,
          minDistinct: o.minDistinct as number,
        },
      });
      process.stdout.write(renderCheckReport(report));
      if (typeof o.json === 'string') writeFileSync(o.json, JSON.stringify(report, null, 2) + '\n');
      if (!report.passed) process.exitCode = 1;
    });
}
