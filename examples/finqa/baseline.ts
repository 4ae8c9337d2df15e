// How far a keyword shortcut gets on the finqa dataset, with no model: search the question, take
// the top result's snippet, answer its first number (or its first words for a text question).
// Rows such a shortcut always solves teach a model little; traps should defeat it.
//
//   node --conditions=rft-source --import tsx examples/finqa/baseline.ts
import { readFileSync } from 'node:fs';
import pino from 'pino';
import answerMatch from '../../graders/answer_match.js';
import { extractNumbers } from '../../src/grading/index.js';
import searchDocs from '../../tools/search_docs.js';
import { TRAIN_FILE, VALID_FILE } from './build-dataset.js';

type Row = { id: string; kind: string; answer_type: string; messages: Array<{ role: string; content: string }> } & Record<string, unknown>;

const noSandbox = (): Promise<never> => Promise.reject(new Error('no sandbox'));
const log = pino({ level: 'silent' });
const signal = new AbortController().signal;
const budget = async () => ({ used: 1, limit: 12, exceeded: false });

async function shortcut(row: Row): Promise<string> {
  const question = row.messages.find((m) => m.role === 'user')?.content ?? '';
  const rollout = { traceId: 'trace_baseline', item: row, calls: async () => [], budget };
  const ctx = { traceId: 'trace_baseline', callId: 'call_1', item: row, rollout, log, signal, sandbox: noSandbox };
  const out = (await searchDocs.handler({ query: question, top_k: 1 }, ctx)) as { results: Array<{ snippet: string }> };
  const snippet = out.results[0]?.snippet ?? '';
  if (row.answer_type === 'text') return `Answer: ${snippet.split(/\s+/).slice(0, 3).join(' ')}`;
  // The first figure: a number with a unit or a scale, not a year, a date or a number of the question.
  const asked = new Set(extractNumbers(question).map((n) => n.value));
  const month = /^\s+(january|february|march|april|may|june|july|august|september|october|november|december)/i;
  const figures = extractNumbers(snippet).filter(
    (x) => !asked.has(x.value) && !/^(19|20)\d\d$/.test(x.raw) && !month.test(snippet.slice(x.index + x.raw.length)),
  );
  const n = figures.find((x) => x.unit !== undefined || Math.abs(x.value) >= 1000) ?? figures[0];
  return n ? `Answer: ${n.raw}` : 'Answer: unknown';
}

const rows = [TRAIN_FILE, VALID_FILE].flatMap((f) =>
  readFileSync(f, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Row),
);
const byKind = new Map<string, number[]>();
for (const row of rows) {
  const answer = await shortcut(row);
  const r = await answerMatch.handler(
    { sample: { output_text: answer }, item: row, traceId: 'trace_baseline' },
    { traceId: 'trace_baseline', rollout: { traceId: 'trace_baseline', item: row, calls: async () => [], budget }, log, signal, templatesRoot: 'examples', sandbox: noSandbox, freshSandbox: noSandbox },
  );
  const score = typeof r === 'number' ? r : r.score;
  byKind.set(row.kind, [...(byKind.get(row.kind) ?? []), score]);
  console.log(`${score.toFixed(2)}  ${row.kind.padEnd(10)} ${row.id.padEnd(38)} ${answer}`);
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(`\nshortcut mean ${mean([...byKind.values()].flat()).toFixed(2)} over ${rows.length} rows; by kind: ` +
  [...byKind].map(([k, xs]) => `${k} ${mean(xs).toFixed(2)} (${xs.length})`).join(', '));
