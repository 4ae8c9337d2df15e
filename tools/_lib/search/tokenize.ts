// The tokenizer shared by indexing and querying, so a query term and a document term meet only
// when they normalise the same way. Numbers stay whole with their decimals ("48.6", "2.41") and
// lose their thousands commas ("1,140" -> "1140"), because financial questions are often about a
// figure and splitting "48.6" into "48" and "6" would match every 48 and every 6 in the corpus.

export interface Token {
  term: string;
  /** Offsets of the original text the term came from (for snippets). */
  start: number;
  end: number;
}

export interface TokenizeOptions {
  /** Light plural stemming (default true): "reports" and "report" become one term. */
  stem?: boolean;
}

// Letters and digits; a '.' or ',' continues a token only between digits.
const WORD = /[\p{L}\p{N}]+(?:(?<=\p{N})[.,]\p{N}+)*/gu;

// Deliberately small: words that carry no meaning in a question about a report. Numbers, units
// ("million", "percent") and finance words are kept.
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    'a an and are as at be been but by can could did do does for from had has have how i if in into is it its ' +
    'me my not of on or our s so t than that the their them then there these they this to was we were what ' +
    'when where which who whom why will with would you your'
  ).split(' '),
);

/**
 * Harman's "S" stemmer: only plurals, so it never merges unrelated words ("operating" stays,
 * "margins" becomes "margin", "companies" becomes "company").
 */
export function stem(word: string): string {
  if (word.length <= 3 || !/^\p{L}+$/u.test(word)) return word;
  if (word.endsWith('ies') && !word.endsWith('eies') && !word.endsWith('aies')) return word.slice(0, -3) + 'y';
  if (word.endsWith('es') && !/(?:aes|ees|oes)$/.test(word)) return word.slice(0, -1);
  if (word.endsWith('s') && !word.endsWith('us') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

export function tokenizeWithOffsets(text: string, opts: TokenizeOptions = {}): Token[] {
  const doStem = opts.stem ?? true;
  const out: Token[] = [];
  for (const m of text.matchAll(WORD)) {
    let term = m[0].normalize('NFKC').toLowerCase();
    if (/^\p{N}/u.test(term)) term = term.replace(/,/g, '');
    if (STOPWORDS.has(term)) continue;
    if (doStem) term = stem(term);
    out.push({ term, start: m.index, end: m.index + m[0].length });
  }
  return out;
}

export function tokenize(text: string, opts: TokenizeOptions = {}): string[] {
  return tokenizeWithOffsets(text, opts).map((t) => t.term);
}
