// The tokenizers the reference implementations use, kept apart so each metric names its own.

/**
 * The characters Python's str.isspace() accepts, the separators of str.split(). JavaScript's \s
 * differs: it lacks U+001C-U+001F and U+0085 and adds U+FEFF (the byte order mark).
 */
// eslint-disable-next-line no-control-regex -- U+001C-U+001F are whitespace to Python: that is the point
const PYTHON_WHITESPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;

/** Python's str.split(): runs of whitespace separate tokens; what NLTK's BLEU/GLEU/METEOR docs feed in. */
export function whitespaceTokens(text: string): string[] {
  return text.split(PYTHON_WHITESPACE).filter((t) => t.length > 0);
}

/**
 * Google rouge-score's default tokenizer: lowercase, every run of characters outside [a-z0-9]
 * becomes a space, split. Non-ASCII letters are dropped ("café" -> "caf"), exactly as there.
 */
export function rougeTokens(text: string, stem?: (w: string) => string): string[] {
  const tokens = text.toLowerCase().replace(/[^a-z0-9]+/g, ' ').split(' ').filter((t) => t.length > 0);
  // rouge-score stems only tokens longer than 3 characters.
  return stem ? tokens.map((t) => (t.length > 3 ? stem(t) : t)) : tokens;
}

/** Unicode code points, as Python iterates a str (so an emoji is one symbol, not two). */
export function codePoints(text: string): number[] {
  const out: number[] = [];
  for (const ch of text) out.push(ch.codePointAt(0) as number);
  return out;
}
