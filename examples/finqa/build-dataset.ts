// Builds train.jsonl and valid.jsonl from questions.ts, after checking every question against
// the corpus: each quote is in its document, each answer follows from its quotes, and each trap
// figure would score under 0.5. The rows' `tools` are generated from the tools' zod schemas the
// same way the server's GET /v1/tools does, so the model sees what the server accepts.
//
//   node --conditions=rft-source --import tsx examples/finqa/build-dataset.ts          # check and write
//   node --conditions=rft-source --import tsx examples/finqa/build-dataset.ts --check  # check, and fail if the files are stale
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { extractNumbers } from '../../src/grading/index.js';
import { chatCompletionsTools, checkTool, type LoadedTool } from '../../src/registry/loader.js';
import { loadCorpus, type Corpus } from '../../tools/_lib/search/index.js';
import { parseReference, scoreNumber } from '../../graders/_lib/score-number.js';
import listDocs from '../../tools/list_docs.js';
import readDoc from '../../tools/read_doc.js';
import searchDocs from '../../tools/search_docs.js';
import { questions as allQuestions, type Question } from './questions.js';

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));

export const DOCS_DIR = here('./docs/');
export const TRAIN_FILE = here('./train.jsonl');
export const VALID_FILE = here('./valid.jsonl');

/** The tool budget of every row (the ledger's limit) and the calls each kind of question deserves. */
export const TOOL_BUDGET = 12;
const TARGET_CALLS: Record<Question['kind'], number> = { lookup: 4, conversion: 4, text: 4, trap: 5, multi_hop: 6 };

export const SYSTEM_PROMPT = [
  'You are a financial analyst. Answer the question using only the document corpus, which you can explore with',
  'the tools search_docs, list_docs and read_doc. Every company in it is fictional: outside knowledge will not help.',
  'When a preliminary estimate and a final report disagree, the final report is right.',
  'End your reply with one line "Answer: <value>" holding a single value: a number with its unit',
  '(for example "$2.75 million", "17.5%" or "1,250") or a short name. Put nothing else on that line.',
].join(' ');

const squash = (s: string): string => s.replace(/\s+/g, ' ');

function evidenceValues(q: Question, corpus: Corpus, problems: string[]): Record<string, number> {
  const values: Record<string, number> = {};
  for (const e of q.evidence) {
    const doc = corpus.byId.get(e.doc);
    if (!doc) {
      problems.push(`${q.id}: no document "${e.doc}"`);
      continue;
    }
    if (!squash(doc.text).includes(squash(e.quote))) problems.push(`${q.id}: quote not found in ${e.doc}: "${e.quote}"`);
    const numbers = extractNumbers(e.quote);
    (e.names ?? []).forEach((name, i) => {
      const n = numbers[i];
      if (n === undefined) problems.push(`${q.id}: quote has no number #${i + 1} for "${name}": "${e.quote}"`);
      else values[name] = n.value;
    });
  }
  return values;
}

/** Every problem found in `qs` (empty when all are consistent with the corpus). */
export function checkQuestions(qs: readonly Question[], corpus: Corpus): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  for (const q of qs) {
    if (ids.has(q.id)) problems.push(`${q.id}: duplicate id`);
    ids.add(q.id);
    const values = evidenceValues(q, corpus, problems);
    if (q.answer_type === 'text') {
      const quotes = q.evidence.map((e) => e.quote.toLowerCase()).join('\n');
      for (const r of [q.reference_answer, ...(q.aliases ?? [])]) {
        if (!quotes.includes(r.toLowerCase())) problems.push(`${q.id}: "${r}" is in none of the quotes`);
      }
      continue;
    }
    const ref = parseReference(q.reference_answer);
    if (!ref) {
      problems.push(`${q.id}: reference "${q.reference_answer}" is not a number`);
      continue;
    }
    const firstName = q.evidence.flatMap((e) => e.names ?? [])[0];
    const expected = q.compute ? q.compute(values) : firstName !== undefined ? values[firstName] : undefined;
    const tolerance = q.tolerance ?? 0.001;
    if (expected === undefined || !Number.isFinite(expected)) {
      problems.push(`${q.id}: the evidence gives no value to check the reference against`);
    } else if (Math.abs(ref.value - expected) > (tolerance / 2) * Math.abs(expected)) {
      problems.push(`${q.id}: reference ${ref.value} does not match the evidence (${expected}) within half the tolerance`);
    }
    if (extractNumbers(q.question).some((n) => n.value === ref.value)) problems.push(`${q.id}: the question contains its answer`);
    if (q.trap) {
      const doc = corpus.byId.get(q.trap.doc);
      if (!doc || !squash(doc.text).includes(squash(q.trap.quote))) problems.push(`${q.id}: trap quote not found in ${q.trap.doc}`);
      const trapScore = scoreNumber(q.trap.quote, q.reference_answer, { tolerance, question: q.question }).score;
      if (trapScore >= 0.5) problems.push(`${q.id}: the trap figure would score ${trapScore.toFixed(2)}`);
    }
  }
  return problems;
}

export function datasetTools(): unknown[] {
  const tools = new Map<string, LoadedTool>();
  for (const def of [searchDocs, listDocs, readDoc]) tools.set(def.name, checkTool(`tools/${def.name}.ts`, def));
  return chatCompletionsTools({ tools, graders: new Map() });
}

export function toRow(q: Question, tools: unknown[]): Record<string, unknown> {
  return {
    id: q.id,
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: q.question },
    ],
    tools,
    reference_answer: q.reference_answer,
    answer_type: q.answer_type,
    ...(q.tolerance !== undefined ? { tolerance: q.tolerance } : {}),
    ...(q.aliases ? { aliases: q.aliases } : {}),
    target_calls: TARGET_CALLS[q.kind],
    tool_budget: TOOL_BUDGET,
    kind: q.kind,
    source_docs: [...new Set(q.evidence.map((e) => e.doc))],
  };
}

export function toJsonl(rows: readonly unknown[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

export async function buildDataset(): Promise<{ train: string; valid: string; problems: string[] }> {
  const corpus = await loadCorpus(DOCS_DIR);
  const problems = checkQuestions(allQuestions, corpus);
  const tools = datasetTools();
  const rows = (split: Question['split']) => toJsonl(allQuestions.filter((q) => q.split === split).map((q) => toRow(q, tools)));
  return { train: rows('train'), valid: rows('valid'), problems };
}

async function main(): Promise<void> {
  const { train, valid, problems } = await buildDataset();
  if (problems.length) {
    console.error(`${problems.length} problem(s) in examples/finqa/questions.ts:\n- ${problems.join('\n- ')}`);
    process.exit(1);
  }
  if (process.argv.includes('--check')) {
    const stale = [];
    for (const [file, text] of [[TRAIN_FILE, train], [VALID_FILE, valid]] as const) {
      if ((await readFile(file, 'utf8').catch(() => '')) !== text) stale.push(file);
    }
    if (stale.length) {
      console.error(`out of date: ${stale.join(', ')}; run node --conditions=rft-source --import tsx examples/finqa/build-dataset.ts`);
      process.exit(1);
    }
    console.log('finqa dataset is consistent with the corpus and up to date');
    return;
  }
  await writeFile(TRAIN_FILE, train);
  await writeFile(VALID_FILE, valid);
  console.log(`wrote ${train.split('\n').length - 1} train rows and ${valid.split('\n').length - 1} valid rows`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
