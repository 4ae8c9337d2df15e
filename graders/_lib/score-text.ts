// Short text answers ("Dry Creek", "Ingrid Solberg"): the answer's words against the reference's,
// after normalising case, punctuation and articles. Words that only restate the question are
// dropped first, so "The project that reached commercial operation was Dry Creek" is as good as
// "Dry Creek", and restating the question earns nothing.
//
// The word score is precision x recall (not F1): naming three candidates where one is right then
// scores about 1/3, like a 1-in-3 guess. A near-miss spelling ("Lumenwerd Data") gets credit
// from fuzzy_match, counted only above 0.5 similarity so unrelated names score 0.
import { fuzzyRatio, clamp01 } from 'rft-endpoints/grading';

export interface TextScore {
  score: number;
  matched: string;
  why: string;
}

const FILLER = new Set(
  'a an the of and in on at for to is was were be it its by with as that this which who what answer final'.split(' '),
);

export function words(text: string): string[] {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s]+/gu, ' ')
    .split(/\s+/)
    .filter((w) => w && !FILLER.has(w));
}

function scoreOne(answerWords: string[], reference: string): number {
  const ref = words(reference);
  if (ref.length === 0) return 0;
  if (answerWords.join(' ') === ref.join(' ')) return 1;
  const a = new Set(answerWords);
  const r = new Set(ref);
  let hits = 0;
  for (const w of a) if (r.has(w)) hits++;
  const byWords = (hits / a.size) * (hits / r.size);
  const fuzzy = fuzzyRatio(answerWords.join(' '), ref.join(' '));
  return Math.max(byWords, clamp01((fuzzy - 0.5) / 0.5));
}

/** The best score against the reference or any of its accepted aliases. */
export function scoreText(answer: string, references: readonly string[], question: string): TextScore {
  const refWords = new Set(references.flatMap(words));
  const asked = new Set(words(question).filter((w) => !refWords.has(w)));
  const content = words(answer).filter((w) => !asked.has(w));
  if (content.length === 0) return { score: 0, matched: '', why: 'no answer words beyond the question' };
  let best = { score: 0, matched: references[0] ?? '' };
  for (const r of references) {
    const s = scoreOne(content, r);
    if (s > best.score) best = { score: s, matched: r };
  }
  return { ...best, why: `"${content.join(' ')}" vs "${best.matched}": ${best.score.toFixed(3)}` };
}
