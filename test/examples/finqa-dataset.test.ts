import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import answerMatch from '../../graders/answer_match.js';
import { loadCorpus } from '../../tools/_lib/search/index.js';
import { buildDataset, checkQuestions, DOCS_DIR, TRAIN_FILE, VALID_FILE } from '../../examples/finqa/build-dataset.js';
import { questions, type Question } from '../../examples/finqa/questions.js';
import { graderContext } from '../helpers/finqa-context.js';

type Row = {
  id: string;
  messages: Array<{ role: string; content: string }>;
  tools: Array<{ type: string; function: { name: string } }>;
  reference_answer: string;
  kind: string;
  tool_budget: number;
};

const readRows = (file: string): Row[] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Row);
const train = readRows(TRAIN_FILE);
const valid = readRows(VALID_FILE);
const rows = [...train, ...valid];

async function score(output_text: string, row: Row): Promise<number> {
  const r = await answerMatch.handler(
    { sample: { output_text }, item: row, traceId: 'trace_test' },
    graderContext({ used: 2, limit: row.tool_budget, exceeded: false }),
  );
  return typeof r === 'number' ? r : r.score;
}

describe('finqa dataset', () => {
  it('has about 24 training and 6 validation rows with distinct ids', () => {
    expect(train.length).toBeGreaterThanOrEqual(22);
    expect(valid.length).toBeGreaterThanOrEqual(6);
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
  });

  it('mixes lookups, multi-hop, unit conversions, preliminary-vs-final traps and text answers', () => {
    const kinds = new Map<string, number>();
    for (const r of rows) kinds.set(r.kind, (kinds.get(r.kind) ?? 0) + 1);
    for (const k of ['lookup', 'multi_hop', 'conversion', 'trap', 'text']) expect(kinds.get(k) ?? 0).toBeGreaterThanOrEqual(3);
  });

  it('gives every row a system and a user message and the three document tools', () => {
    for (const r of rows) {
      expect(r.messages.map((m) => m.role)).toEqual(['system', 'user']);
      expect(r.tools.map((t) => t.function.name)).toEqual(['search_docs', 'list_docs', 'read_doc']);
    }
  });

  it('is what build-dataset.ts produces from questions.ts, and questions.ts agrees with the corpus', async () => {
    const built = await buildDataset();
    expect(built.problems).toEqual([]);
    expect(built.train).toBe(readFileSync(TRAIN_FILE, 'utf8'));
    expect(built.valid).toBe(readFileSync(VALID_FILE, 'utf8'));
  });

  it.each(rows.map((r) => [r.id, r] as const))('%s: the reference answer scores at least 0.99 and an empty answer 0', async (_id, row) => {
    expect(await score(`Answer: ${row.reference_answer}`, row)).toBeGreaterThanOrEqual(0.99);
    expect(await score('', row)).toBe(0);
  });
});

describe('build-dataset checks', () => {
  const base = questions.find((q) => q.id === 'halvorsen-q2-revenue-final') as Question;

  it('accepts the shipped questions', async () => {
    expect(checkQuestions(questions, await loadCorpus(DOCS_DIR))).toEqual([]);
  });

  it('reports a quote that is not in its document', async () => {
    const q = { ...base, evidence: [{ doc: 'halvorsen-q2-2025', quote: 'Final revenue is $51.9 million', names: ['r'] }] };
    const problems = checkQuestions([q], await loadCorpus(DOCS_DIR));
    expect(problems.some((p) => p.includes('quote not found'))).toBe(true);
  });

  it('reports a reference that does not follow from the evidence', async () => {
    const problems = checkQuestions([{ ...base, reference_answer: '$52.3 million' }], await loadCorpus(DOCS_DIR));
    expect(problems.some((p) => p.includes('does not match the evidence'))).toBe(true);
  });

  it('reports a trap figure that would still earn credit', async () => {
    const q = { ...base, tolerance: 0.05 };
    const problems = checkQuestions([q], await loadCorpus(DOCS_DIR));
    expect(problems.some((p) => p.includes('the trap figure would score'))).toBe(true);
  });

  it('reports a text answer that none of its quotes contains', async () => {
    const text = questions.find((q) => q.answer_type === 'text') as Question;
    const problems = checkQuestions([{ ...text, reference_answer: 'Granite Rise' }], await loadCorpus(DOCS_DIR));
    expect(problems.some((p) => p.includes('is in none of the quotes'))).toBe(true);
  });
});

describe('finqa job.json', () => {
  const job = JSON.parse(readFileSync(new URL('../../examples/finqa/job.json', import.meta.url), 'utf8')) as {
    method: { type: string; reinforcement: { tools: Array<{ name: string; server_url: string }>; grader: { type: string; name: string }; max_episode_steps: number } };
  };

  it('names exactly the tools the dataset rows describe, all on one dispatching URL', () => {
    const r = job.method.reinforcement;
    expect(r.tools.map((t) => t.name).sort()).toEqual(rows[0]!.tools.map((t) => t.function.name).sort());
    expect(new Set(r.tools.map((t) => t.server_url)).size).toBe(1);
  });

  it('uses the answer_match endpoint grader and allows fewer steps than the tool budget', () => {
    expect(job.method.type).toBe('reinforcement');
    expect(job.method.reinforcement.grader).toMatchObject({ type: 'endpoint', name: answerMatch.name });
    expect(job.method.reinforcement.max_episode_steps).toBeLessThanOrEqual(rows[0]!.tool_budget);
  });
});
