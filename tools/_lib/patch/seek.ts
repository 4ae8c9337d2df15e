// Finds where a block of lines sits in a file, with the Codex apply_patch tolerance ladder: exact,
// then ignoring trailing whitespace, then ignoring surrounding whitespace, then also folding
// typographic punctuation to ASCII. Models copy context imperfectly; a strict matcher makes them
// retry for nothing.

const PUNCTUATION: Record<string, string> = {};
for (const c of '\u2010\u2011\u2012\u2013\u2014\u2015\u2212') PUNCTUATION[c] = '-';
for (const c of '\u2018\u2019\u201A\u201B') PUNCTUATION[c] = "'";
for (const c of '\u201C\u201D\u201E\u201F') PUNCTUATION[c] = '"';
for (const c of '\u00A0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A\u202F\u205F\u3000') PUNCTUATION[c] = ' ';
const PUNCT_RE = new RegExp(`[${Object.keys(PUNCTUATION).join('')}]`, 'g');

type Normalizer = (s: string) => string;

export const MATCH_LEVELS: readonly Normalizer[] = [
  (s) => s,
  (s) => s.trimEnd(),
  (s) => s.trim(),
  (s) => s.trim().replace(PUNCT_RE, (c) => PUNCTUATION[c] ?? c),
];

function matchesAt(lines: readonly string[], pattern: readonly string[], at: number, norm: Normalizer): boolean {
  for (let j = 0; j < pattern.length; j++) {
    if (norm(lines[at + j] as string) !== norm(pattern[j] as string)) return false;
  }
  return true;
}

/**
 * Index of the first occurrence of `pattern` in `lines` at or after `start`, or -1.
 * `eof`: try the very end of the file first. `hint`: try this index first (unified diff line
 * numbers), at every tolerance level before scanning.
 */
export function seekSequence(
  lines: readonly string[],
  pattern: readonly string[],
  start: number,
  opts: { eof?: boolean; hint?: number } = {},
): number {
  if (pattern.length === 0) return start;
  if (pattern.length > lines.length) return -1;
  const last = lines.length - pattern.length;
  for (const norm of MATCH_LEVELS) {
    if (opts.eof && matchesAt(lines, pattern, last, norm)) return last;
    if (opts.hint !== undefined && opts.hint >= start && opts.hint <= last && matchesAt(lines, pattern, opts.hint, norm)) {
      return opts.hint;
    }
    for (let i = start; i <= last; i++) {
      if (matchesAt(lines, pattern, i, norm)) return i;
    }
  }
  return -1;
}
