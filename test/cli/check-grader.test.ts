// check-grader against the real app built in-process, with small graders in a temp graders dir.
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { register, renderCheckReport, runCheckGrader } from '../../src/cli/check-grader.js';
import { rejected } from '../helpers/codes.js';

let dir: string;
let env: Record<string, string | undefined>;
const dataset = () => join(dir, 'data.jsonl');

const io = { input: '{{sample.output_text}}', reference: '{{item.reference_answer}}' };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'check-grader-test-'));
  mkdirSync(join(dir, 'graders'));
  mkdirSync(join(dir, 'tools'));
  const write = (name: string, json: unknown) => writeFileSync(join(dir, 'graders', `${name}.json`), JSON.stringify(json));
  write('fuzzy', { type: 'text_similarity', name: 'fuzzy', ...io, evaluation_metric: 'fuzzy_match' });
  write('exact', { type: 'string_check', name: 'exact', ...io, operation: 'eq' });
  // Rewards anything that is not the literal "zzz": the empty answer included (a hackable grader).
  write('lenient', { type: 'string_check', name: 'lenient', input: '{{sample.output_text}}', reference: 'zzz', operation: 'ne' });
  const rows = [
    { messages: [{ role: 'user', content: 'Q3 revenue?' }], reference_answer: 'Revenue was $4.2 million in Q3' },
    { messages: [{ role: 'user', content: 'Margin?' }], reference_answer: 'The operating margin was 12.5%' },
  ];
  writeFileSync(dataset(), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  env = { PATH: process.env.PATH, RFT_GRADERS_DIR: join(dir, 'graders'), RFT_TOOLS_DIR: join(dir, 'tools'), RFT_SANDBOX: 'none', RFT_LOG_LEVEL: 'error' };
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('check-grader', () => {
  it('passes a partial-credit grader on every check', async () => {
    const r = await runCheckGrader({ dataset: dataset(), grader: 'fuzzy', env, concurrency: 2 });
    expect(r.passed).toBe(true);
    // Rows count from 0, as the results file and every other command count them.
    expect(r.rows.map((x) => x.row)).toEqual([0, 1]);
    expect(r.rows.map((x) => x.noop.score)).toEqual([0, 0]);
    expect(r.rows.map((x) => x.reference?.score)).toEqual([1, 1]);
    expect(r.rows.every((x) => x.repeat?.spread === 0)).toBe(true);
    expect(r.rows[0]?.continuity?.distinct).toBeGreaterThan(5);
  });

  it('fails the continuity check for an all-or-nothing grader', async () => {
    const r = await runCheckGrader({ dataset: dataset(), grader: 'exact', env });
    expect(r.passed).toBe(false);
    expect(r.summary.continuity).toEqual({ passed: 0, failed: 2, skipped: 0 });
    expect(r.rows[0]?.continuity?.distinct).toBe(2);
    expect(r.summary.noop.failed).toBe(0);
  });

  it('fails the no-op check for a grader that rewards an empty answer', async () => {
    const r = await runCheckGrader({ dataset: dataset(), grader: 'lenient', env, thresholds: { minDistinct: 1 } });
    expect(r.summary.noop).toEqual({ passed: 0, failed: 2, skipped: 0 });
    expect(renderCheckReport(r)).toContain('FAIL: noop 0 ok, 2 failed');
  });

  it('skips reference checks for rows without the reference field', async () => {
    const r = await runCheckGrader({ dataset: dataset(), grader: 'fuzzy', env, referenceField: 'gold' });
    expect(r.summary.reference).toEqual({ passed: 0, failed: 0, skipped: 2 });
    expect(r.summary.noop.passed).toBe(2);
    // The report says why they were skipped, and what to change.
    const text = renderCheckReport(r);
    expect(text).toContain('reference 0 ok, 0 failed, 2 skipped (no item.gold)');
    expect(text).toContain('2 of 2 rows have no item.gold, so their reference and continuity checks were skipped: --reference-field');
  });

  it('still checks repeatability on the no-op answer for rows without a reference', async () => {
    const r = await runCheckGrader({ dataset: dataset(), grader: 'fuzzy', env, referenceField: 'gold', repeats: 3 });
    expect(r.summary.repeat).toEqual({ passed: 2, failed: 0, skipped: 0 });
    expect(r.rows[0]?.repeat?.scores).toHaveLength(3);
  });

  it('refuses a grader the server does not serve', async () => {
    const e = await rejected(runCheckGrader({ dataset: dataset(), grader: 'nope', env }));
    expect(e.code).toBe('RFT_ERR_UNKNOWN_GRADER');
  });

  it('runs as a command: prints tables, writes JSON, exits 1 on failure', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, env);
    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (out.push(String(chunk)), true)) as typeof process.stdout.write;
    const json = join(dir, 'report.json');
    try {
      const program = new Command().exitOverride();
      register(program);
      await program.parseAsync(['node', 'rft', 'check-grader', '--dataset', dataset(), '--grader', 'exact', '--json', json, '--repeats', '3']);
    } finally {
      process.stdout.write = write;
      process.env = saved;
    }
    expect(process.exitCode).toBe(1);
    process.exitCode = 0;
    expect(out.join('')).toContain('(d) continuity');
    const report = JSON.parse(readFileSync(json, 'utf8')) as { passed: boolean; rows: Array<{ repeat: { scores: number[] } }> };
    expect(report.passed).toBe(false);
    expect(report.rows[0]?.repeat.scores).toHaveLength(3);
  });
});
