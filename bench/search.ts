// BM25 search figures: index build time and query latency over the finqa corpus and over a
// corpus 50 times larger, against a baseline measured in the same run: scoring the same query
// by re-tokenizing every document per query (what a search without an index costs).
//
//   node --conditions=rft-source --import tsx bench/search.ts
import { fileURLToPath } from 'node:url';
import { Bm25Index, loadCorpus, tokenize, type Bm25Document } from '../tools/_lib/search/index.js';

const QUERIES = [
  'Halvorsen second quarter 2025 revenue',
  'Bluefinch Lumenward purchase price cash',
  'Corvane Ashbourne Vale closure roles',
  'Pellucid installed capacity September',
  'Tessaline service revenue Q1 2025',
  'guidance raised fiscal 2025',
];

/** Baseline: term overlap counted by tokenizing every document for every query. */
function scanSearch(docs: readonly Bm25Document[], query: string, k: number): string[] {
  const terms = new Set(tokenize(query));
  return docs
    .map((d) => ({ id: d.id, s: tokenize(d.text).filter((t) => terms.has(t)).length }))
    .filter((x) => x.s > 0)
    .sort((a, b) => b.s - a.s)
    .slice(0, k)
    .map((x) => x.id);
}

function perQueryUs(fn: (q: string) => unknown, rounds: number): number {
  for (const q of QUERIES) fn(q); // warm up
  const t0 = performance.now();
  for (let r = 0; r < rounds; r++) for (const q of QUERIES) fn(q);
  return ((performance.now() - t0) * 1000) / (rounds * QUERIES.length);
}

const corpus = await loadCorpus(fileURLToPath(new URL('../examples/finqa/docs/', import.meta.url)));
const base = corpus.docs.map((d) => ({ id: d.id, text: d.text }));

for (const copies of [1, 50]) {
  const docs = Array.from({ length: copies }, (_, c) => base.map((d) => ({ id: `${d.id}#${c}`, text: d.text }))).flat();
  const t0 = performance.now();
  const index = new Bm25Index(docs);
  const buildMs = performance.now() - t0;
  const rounds = copies === 1 ? 400 : 20;
  const bm25 = perQueryUs((q) => index.search(q, 3), rounds);
  const scan = perQueryUs((q) => scanSearch(docs, q, 3), copies === 1 ? 40 : 4);
  console.log(
    `${String(docs.length).padStart(5)} docs: build ${buildMs.toFixed(1)} ms; query top-3 with snippets ${bm25.toFixed(0)} us; ` +
      `scan baseline ${scan.toFixed(0)} us; ratio scan/bm25 ${(scan / bm25).toFixed(1)}x`,
  );
}
