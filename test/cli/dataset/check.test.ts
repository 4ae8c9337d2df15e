// `dataset check`: the shipped datasets pass against the units they are served with; a broken file
// fails with the line and a code for each problem, a summary, and exit 1.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDataset, CODES, itemPathsOfConfig, MIN_TRAINING_ROWS, type GraderNeeds, firstDifference } from '../../../src/cli/dataset/check.js';
import { loadConfig } from '../../../src/config.js';
import { loadRegistry, type Registry } from '../../../src/registry/loader.js';
import { startTestServer } from '../../helpers/server.js';
import { removeTempDirs, repoRoot, runCli, tempDir, writeJsonl } from '../harness.js';

let repo: Registry;
let blank: Registry;
beforeAll(async () => {
  repo = await loadRegistry({ toolsDir: join(repoRoot, 'tools'), gradersDir: join(repoRoot, 'graders') });
  blank = await loadRegistry({ toolsDir: join(repoRoot, 'examples/blank/tools'), gradersDir: join(repoRoot, 'examples/blank/graders') });
});
afterAll(removeTempDirs);

// The server's own limits, as `serve` would load them with no setting.
const limits = loadConfig({});
const toolsOf = (r: Registry) => new Map([...r.tools].map(([name, t]) => [name, t.parameters as unknown]));
const needsOf = (r: Registry, name: string): GraderNeeds => ({ name, paths: [], schema: r.graders.get(name)!.def.itemSchema! });

describe('dataset check on the shipped datasets', () => {
  it.each([
    ['examples/finqa/train.jsonl', 'answer_match', MIN_TRAINING_ROWS, 26],
    ['examples/finqa/valid.jsonl', 'answer_match', 1, 6],
    ['examples/coding/train.jsonl', 'unit_tests', MIN_TRAINING_ROWS, 10],
  ] as const)('%s passes with %s', (file, grader, minRows, rows) => {
    const report = checkDataset({ file: join(repoRoot, file), tools: toolsOf(repo), grader: needsOf(repo, grader), minRows, limits });
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ rows, rowsWithProblems: 0, ok: true });
  });

  it('examples/blank/train.jsonl passes with its own tool and grader', () => {
    const report = checkDataset({ file: join(repoRoot, 'examples/blank/train.jsonl'), tools: toolsOf(blank), grader: needsOf(blank, 'price_match'), minRows: MIN_TRAINING_ROWS, limits });
    expect(report.problems).toEqual([]);
    expect(report.rows).toBe(10);
  });
});

describe('firstDifference', () => {
  it('names the first path where a row\'s tool schema and the server\'s differ, and what each holds', () => {
    const served = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };
    expect(firstDifference({ ...served, required: ['q', 'k'] }, served, 'parameters')).toBe('parameters.required[1] (the row has "k", the server none)');
    expect(firstDifference({ ...served, properties: { q: { type: 'number' } } }, served, 'parameters')).toBe(
      'parameters.properties.q.type (the row has "number", the server "string")',
    );
    expect(firstDifference(null, served, 'parameters')).toMatch(/^parameters \(the row has null, the server \{/);
  });
});

describe('dataset check on a broken file', () => {
  let first: Record<string, unknown>;
  const finqaRow = () => structuredClone(first);
  let file: string;
  beforeAll(() => {
    first = JSON.parse(readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').split('\n')[0]!) as Record<string, unknown>;
    const schemaDrift = finqaRow();
    const tools = schemaDrift.tools as { function: { name: string; parameters: { properties: Record<string, unknown> } } }[];
    tools[0]!.function.parameters.properties.extra = { type: 'string' };
    const rows = [
      finqaRow(), // line 1: fine
      { ...finqaRow(), messages: [...(first.messages as unknown[]), { role: 'assistant', content: 'Answer: 4' }] }, // 2
      { ...finqaRow(), tool_budget: '12' }, // 3
      { ...finqaRow(), tool_budget: 0 }, // 4: a warning only
      schemaDrift, // 5
      { ...finqaRow(), tools: [...(first.tools as unknown[]), { type: 'function', function: { name: 'delete_everything', parameters: { type: 'object' } } }] }, // 6
      { ...finqaRow(), reference_answer: undefined }, // 7
      { ...finqaRow(), tools: undefined }, // 8
    ];
    file = join(tempDir(), 'broken.jsonl');
    writeJsonl(file, rows);
    appendFileSync(file, '{"messages": [\n'); // line 9: torn JSON
  });

  it('names the line and a code for every problem, and counts the rows', () => {
    const report = checkDataset({ file, tools: toolsOf(repo), grader: needsOf(repo, 'answer_match'), minRows: MIN_TRAINING_ROWS, limits });
    expect(report.problems.map((p) => [p.line, p.code, p.warning ?? false])).toEqual([
      [2, CODES.lastNotUser, false],
      [3, CODES.toolBudget, false],
      [4, CODES.toolBudgetZero, true],
      [5, CODES.toolSchema, false],
      [6, CODES.toolUnknown, false],
      [7, CODES.graderField, false],
      [8, CODES.noTools, false],
      [9, CODES.notJson, false],
      [0, CODES.rowCount, false],
    ]);
    expect(report).toMatchObject({ rows: 9, rowsWithProblems: 7, ok: false });
    expect(report.problems.find((p) => p.line === 3)!.message).toContain('got "12"');
    expect(report.problems.find((p) => p.line === 5)!.message).toContain('differ from the server\'s schema at parameters.properties.extra (the row has {"type":"string"}, the server none)');
    expect(report.problems.find((p) => p.line === 7)!.message).toBe('grader "answer_match" reads item.reference_answer: missing from this row');
  });

  it('reads the fields an OpenAI grader config\'s templates name', () => {
    const paths = itemPathsOfConfig({ type: 'multi', graders: { a: { type: 'string_check', input: '{{sample.output_text}}', reference: '{{ item.answer.text }}' }, b: { input: [{ content: 'Q: {{item.question}}' }] } } });
    expect(paths.sort()).toEqual(['item.answer.text', 'item.question']);
    const report = checkDataset({ file, tools: toolsOf(repo), grader: { name: 'cfg', paths: ['item.reference_answer', 'item.kind'] }, minRows: 1, limits });
    expect(report.problems.filter((p) => p.code === CODES.graderField).map((p) => p.line)).toEqual([7]);
  });

  it('as a command: the lines, a summary, exit 1; a shipped dataset exits 0', async () => {
    const [bad, good] = await Promise.all([runCli(['dataset', 'check', file]), runCli(['dataset', 'check', 'examples/finqa/valid.jsonl', '--validation'])]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(`${file}:2: ${CODES.lastNotUser} the last message is "assistant"`);
    expect(bad.stdout).toContain(`${file}:4: warning ${CODES.toolBudgetZero}`);
    expect(bad.stdout).toMatch(/broken\.jsonl: 9 rows, 2 ok, 7 with problems; 8 problems, 1 warning \(tools of .*tools\/, grader answer_match\)\n$/);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toMatch(/valid\.jsonl: 6 rows, 6 ok, 0 with problems; 0 problems, 0 warnings/);
  }, 60_000);

  it('asks the server RFT_SERVER names, as --server does (not this folder\'s units)', async () => {
    const server = await startTestServer();
    try {
      const r = await runCli(['dataset', 'check', 'examples/finqa/valid.jsonl', '--validation'], { RFT_SERVER: server.url, RFT_API_KEY: server.key });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`(tools of ${server.url}, grader answer_match)`);
    } finally {
      await server.close();
    }
  }, 60_000);
});

describe("dataset check applies the server's intake limits to each row", () => {
  let first: string;
  let file: string;
  /** The finqa row with a field `deep` holding `n` nested objects: the row then nests n + 1 deep. */
  const nested = (n: number) => first.replace(/^\{/, `{"deep":${'{"a":'.repeat(n)}1${'}'.repeat(n)},`);
  beforeAll(() => {
    first = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').split('\n')[0]!;
    file = join(tempDir(), 'intake.jsonl');
    const notUtf8 = Buffer.from(first.replace('"content": "', '"content": "@').replace('"content":"', '"content":"@'), 'utf8');
    notUtf8[notUtf8.indexOf('@')] = 0xff;
    writeFileSync(file, Buffer.concat([Buffer.from([first, nested(80), nested(limits.maxJsonDepth - 2), ''].join('\n')), notUtf8, Buffer.from('\n')]));
  });

  it('flags a row nested past RFT_MAX_JSON_DEPTH (as "item") and a line that is not UTF-8, and passes the row at the limit', () => {
    const report = checkDataset({ file, tools: toolsOf(repo), grader: needsOf(repo, 'answer_match'), minRows: 1, limits });
    expect(report.problems.map((p) => [p.line, p.code])).toEqual([
      [2, CODES.rowDepth],
      [4, CODES.notUtf8],
    ]);
    expect(report).toMatchObject({ rows: 4, rowsWithProblems: 2, ok: false });
  });

  it('reads the limits from the config the server is given', () => {
    const deeper = loadConfig({ RFT_MAX_JSON_DEPTH: '100' });
    const report = checkDataset({ file, tools: toolsOf(repo), grader: needsOf(repo, 'answer_match'), minRows: 1, limits: deeper });
    expect(report.problems.map((p) => [p.line, p.code])).toEqual([[4, CODES.notUtf8]]);
    const small = loadConfig({ RFT_BODY_LIMIT_BYTES: '2048' });
    expect(checkDataset({ file, tools: toolsOf(repo), minRows: 1, limits: small }).problems.map((p) => p.code)).toContain(CODES.rowSize);
  });

  it('agrees with the server: the row it flags is refused as the item of a grade, the row at the limit is graded', async () => {
    const server = await startTestServer({ listen: false });
    try {
      const grade = (row: string) =>
        server.app.inject({
          method: 'POST',
          url: '/graders/answer_match',
          headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
          payload: `{"sample":{"output_text":"1"},"item":${row},"trace_id":"trace_intake_${Math.random().toString(36).slice(2)}"}`,
        });
      const [deep, atLimit] = await Promise.all([grade(nested(80)), grade(nested(limits.maxJsonDepth - 2))]);
      expect(deep.statusCode).toBe(400);
      expect((deep.json() as { error: { code: string } }).error.code).toBe('RFT_ERR_BODY_TOO_DEEP');
      expect(atLimit.statusCode, atLimit.body).toBe(200);
    } finally {
      await server.close();
    }
  });
});
