// The passage of a document that best answers a query, so a search result shows the figure the
// model is looking for instead of the document's first lines. Passages are lines (a paragraph or a
// table row in markdown), scored with BM25 treating the document's passages as the corpus: the
// company name is rare in the corpus but everywhere in its own report, so it should not decide
// which line of that report is shown.
import { idf, termScore } from './scoring.js';
import { tokenizeWithOffsets, type Token, type TokenizeOptions } from './tokenize.js';

export interface SnippetOptions {
  k1: number;
  maxChars: number;
  tokenize: TokenizeOptions;
}

/** Markdown emphasis and table bars read as noise in a one-line snippet. */
function clean(line: string): string {
  return line
    .replace(/\*\*|__/g, '')
    .replace(/^\s*[#>*-]+\s*/, '')
    .replace(/\s*\|\s*/g, ' | ')
    .replace(/^\s*\|\s*|\s*\|\s*$/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

interface Passage {
  /** What the snippet shows. */
  text: string;
  /** Where its score comes from (a table row, without its header). */
  scored: string;
}

/**
 * No length normalisation between passages: the snippet is clipped around the match anyway, and a
 * long paragraph that holds the headline figure should not lose to a short aside.
 */
const PASSAGE_B = 0;

const TABLE_RULE = /^\s*\|?\s*:?-{2,}/;

/**
 * Candidate passages: every line except headings (the title is shown next to the snippet anyway)
 * and table rules. A table row carries its header row, because "Fleet Services | $20.8 million"
 * means little without "Q2 2025 | Q2 2024".
 */
function passagesOf(text: string): Passage[] {
  const lines = text.split('\n');
  const out: Passage[] = [];
  let header: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (!line.trim().startsWith('|')) header = null;
    if (line.trim().length === 0 || /^\s*#/.test(line) || TABLE_RULE.test(line)) continue;
    if (line.trim().startsWith('|')) {
      if (header === null && TABLE_RULE.test(lines[i + 1] ?? '')) {
        header = clean(line);
        continue;
      }
      const row = clean(line);
      out.push({ text: header ? `${header} — ${row}` : row, scored: row });
      continue;
    }
    out.push({ text: clean(line), scored: line });
  }
  return out;
}

/** A document's passages, tokenized once (search results reuse them for every query). */
export interface PreparedPassages {
  passages: Passage[];
  tokens: Token[][];
  /** Passages containing each term. */
  df: Map<string, number>;
  avgLen: number;
  /** Terms of the document's first heading (its title). */
  titleTerms: Set<string>;
}

export function preparePassages(text: string, tokenize: TokenizeOptions): PreparedPassages {
  const passages = passagesOf(text);
  const tokens = passages.map((p) => tokenizeWithOffsets(p.scored, tokenize));
  const df = new Map<string, number>();
  for (const ts of tokens) for (const term of new Set(ts.map((t) => t.term))) df.set(term, (df.get(term) ?? 0) + 1);
  const avgLen = passages.length ? tokens.reduce((n, t) => n + t.length, 0) / passages.length : 0;
  const title = text.split('\n').find((l) => /^\s*#/.test(l)) ?? '';
  const titleTerms = new Set(tokenizeWithOffsets(title.replace(/^\s*#+/, ''), tokenize).map((t) => t.term));
  return { passages, tokens, df, avgLen, titleTerms };
}

export function bestSnippet(prepared: PreparedPassages, queryTerms: readonly string[], opts: SnippetOptions): string {
  const { passages, tokens: tokenized, df, avgLen, titleTerms } = prepared;
  // Query words the title already answers ("Corvane", "2024" in "Corvane Foods — Annual Results
  // 2024") say why the document matched, not which of its lines is wanted.
  const beyondTitle = queryTerms.filter((t) => !titleTerms.has(t));
  const wanted = new Set(beyondTitle.length ? beyondTitle : queryTerms);
  if (passages.length === 0) return '';
  let best = 0;
  let bestScore = 0;
  tokenized.forEach((tokens, i) => {
    const tf = new Map<string, number>();
    for (const t of tokens) if (wanted.has(t.term)) tf.set(t.term, (tf.get(t.term) ?? 0) + 1);
    let s = 0;
    for (const [term, n] of tf) s += termScore(idf(passages.length, df.get(term) ?? 0), n, tokens.length, avgLen, opts.k1, PASSAGE_B);
    // Questions here are about figures: between similar matches, show the line that has one.
    if (!/\d/.test(passages[i]?.scored ?? '')) s *= 0.8;
    // Reports put headline figures first: between similar matches, show the earlier line.
    s *= 1 - (0.15 * i) / passages.length;
    if (s > bestScore) {
      bestScore = s;
      best = i;
    }
  });
  const passage = (passages[best] as Passage).text;
  if (passage.length <= opts.maxChars) return passage;
  // Centre the window on the first query term of the passage, then snap to word boundaries.
  const first = tokenizeWithOffsets(passage, opts.tokenize).find((t) => wanted.has(t.term));
  const anchor = first ? first.start : 0;
  let start = Math.max(0, Math.min(anchor - Math.floor(opts.maxChars / 3), passage.length - opts.maxChars));
  let end = Math.min(passage.length, start + opts.maxChars);
  if (start > 0) start = passage.indexOf(' ', start) + 1 || start;
  if (end < passage.length) end = passage.lastIndexOf(' ', end) > start ? passage.lastIndexOf(' ', end) : end;
  return (start > 0 ? '…' : '') + passage.slice(start, end).trim() + (end < passage.length ? '…' : '');
}
