// `report`: what a results JSONL from `rollout` says about the dataset, as a table and an HTML page.
import { existsSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { errors } from '../../errors.js';
import { readResults } from '../rollout/results.js';
import { renderHtml, summaryPairs } from './html.js';
import { computeStats, type ReportStats } from './stats.js';
import { renderTable } from './table.js';

/** Rows are numbered from 0 everywhere, on screen as in the results file's `row` and a scripted model's `row`:
 * row N is the dataset's (N+1)th row (`dataset check` names lines of the file, counted from 1). */
export function renderTerminal(s: ReportStats): string {
  const perRow = renderTable(
    ['row', 'tries', 'graded', 'mean', 'best', 'spread', 'signal'],
    s.rows.map((r) => [r.row, r.tries, r.scores.length, r.mean, r.best, r.spread, r.scores.length < 2 ? '?' : (r.spread ?? 0) < 1e-9 ? 'none' : 'yes']),
  );
  const summary = renderTable(['measure', 'value'], summaryPairs(s));
  const curve = renderTable(['k', 'expected best', 'rows'], s.bestOfK.map((b) => [b.k, b.expectedBest, b.rows]));
  return `${perRow}\n\n${curve}\n\n${summary}\n`;
}

async function action(file: string, opts: { html?: string }): Promise<void> {
  if (!existsSync(file)) throw errors.file(file, 'no such results file');
  const results = readResults(file);
  if (results.length === 0) throw errors.cliUsage(`${file} holds no rollout results`);
  const stats = computeStats(results);
  process.stdout.write(renderTerminal(stats));
  if (opts.html) {
    writeFileSync(opts.html, renderHtml(stats, file));
    process.stdout.write(`wrote ${opts.html}\n`);
  }
}

export function register(program: Command): void {
  program
    .command('report')
    .description('summarize a rollout results JSONL: per-row mean, best-of-k and spread, rows with no signal, tool calls, latency, budget')
    .argument('<results>', 'results JSONL written by `rollout`')
    .option('--html <file>', 'also write a self-contained HTML report with plots')
    .action(action);
}
