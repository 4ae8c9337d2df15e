// Okapi BM25 over an in-memory set of documents: small corpora (tens to a few thousand documents),
// built once and queried many times. No dependencies, deterministic ranking (ties by id).
import { tokenize, type TokenizeOptions } from './tokenize.js';
import { bestSnippet, preparePassages, type PreparedPassages } from './snippet.js';
import { idf, termScore } from './scoring.js';

export { idf, termScore } from './scoring.js';

export interface Bm25Document {
  id: string;
  text: string;
}

export interface Bm25Options extends TokenizeOptions {
  /** Term-frequency saturation (default 1.2). */
  k1?: number;
  /** Length normalisation, 0 = none, 1 = full (default 0.75). */
  b?: number;
}

export interface SearchHit {
  id: string;
  score: number;
  /** The best-matching passage of the document, shortened around the first query term. */
  snippet: string;
}

export interface SearchOptions {
  /** Longest snippet in characters (default 240). */
  snippetChars?: number;
}

export class Bm25Index {
  readonly k1: number;
  readonly b: number;
  private readonly tokenizeOpts: TokenizeOptions;
  private readonly docs: Bm25Document[];
  private readonly lengths: number[];
  private readonly avgLength: number;
  /** term -> [doc index, term frequency] pairs. */
  private readonly postings = new Map<string, Array<[number, number]>>();
  /** Snippet passages per doc index, prepared the first time the doc is a result. */
  private readonly passages = new Map<number, PreparedPassages>();

  constructor(docs: readonly Bm25Document[], opts: Bm25Options = {}) {
    this.k1 = opts.k1 ?? 1.2;
    this.b = opts.b ?? 0.75;
    this.tokenizeOpts = opts.stem !== undefined ? { stem: opts.stem } : {};
    this.docs = [...docs];
    this.lengths = [];
    let total = 0;
    this.docs.forEach((doc, i) => {
      const terms = tokenize(doc.text, this.tokenizeOpts);
      this.lengths.push(terms.length);
      total += terms.length;
      const tf = new Map<string, number>();
      for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const [t, n] of tf) {
        let list = this.postings.get(t);
        if (!list) this.postings.set(t, (list = []));
        list.push([i, n]);
      }
    });
    this.avgLength = this.docs.length ? total / this.docs.length : 0;
  }

  get size(): number {
    return this.docs.length;
  }

  /** The query's distinct terms: repeating a word in a query does not weigh it more. */
  queryTerms(query: string): string[] {
    return [...new Set(tokenize(query, this.tokenizeOpts))];
  }

  idf(term: string): number {
    return idf(this.docs.length, this.postings.get(term)?.length ?? 0);
  }

  /** Every document's score for `query`, by doc index; documents with no query term are absent. */
  private scoreAll(terms: string[]): Map<number, number> {
    const scores = new Map<number, number>();
    for (const term of terms) {
      const list = this.postings.get(term);
      if (!list) continue;
      const w = idf(this.docs.length, list.length);
      for (const [i, tf] of list) {
        const s = termScore(w, tf, this.lengths[i] ?? 0, this.avgLength, this.k1, this.b);
        scores.set(i, (scores.get(i) ?? 0) + s);
      }
    }
    return scores;
  }

  /** The BM25 score of one document (0 when it has none of the terms, or is unknown). */
  score(query: string, id: string): number {
    const i = this.docs.findIndex((d) => d.id === id);
    if (i < 0) return 0;
    return this.scoreAll(this.queryTerms(query)).get(i) ?? 0;
  }

  /** The `k` best documents, best first; an empty list when no document shares a term with the query. */
  search(query: string, k: number, opts: SearchOptions = {}): SearchHit[] {
    const terms = this.queryTerms(query);
    if (k <= 0 || terms.length === 0) return [];
    const ranked = [...this.scoreAll(terms)]
      .map(([i, score]) => ({ i, doc: this.docs[i] as Bm25Document, score }))
      .sort((x, y) => y.score - x.score || (x.doc.id < y.doc.id ? -1 : x.doc.id > y.doc.id ? 1 : 0))
      .slice(0, k);
    return ranked.map(({ i, doc, score }) => {
      let prepared = this.passages.get(i);
      if (!prepared) this.passages.set(i, (prepared = preparePassages(doc.text, this.tokenizeOpts)));
      const snippetOpts = { k1: this.k1, maxChars: opts.snippetChars ?? 240, tokenize: this.tokenizeOpts };
      return { id: doc.id, score, snippet: bestSnippet(prepared, terms, snippetOpts) };
    });
  }
}
