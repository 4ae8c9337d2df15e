// GLEU (Google-BLEU, Wu et al. 2016) as NLTK's sentence_gleu(references=[reference], hypothesis,
// min_len=1, max_len=4): over all 1- to 4-grams, matches / max(answer n-grams, reference n-grams),
// i.e. min(precision, recall). 0 when both sides are empty.
import { ngramCounts, overlap, total } from './ngrams.js';

function everygrams(tokens: string[], minLen: number, maxLen: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let n = minLen; n <= maxLen; n++) ngramCounts(tokens, n, counts);
  return counts;
}

export function sentenceGleu(hypothesis: string[], reference: string[], minLen = 1, maxLen = 4): number {
  const h = everygrams(hypothesis, minLen, maxLen);
  const r = everygrams(reference, minLen, maxLen);
  const nAll = Math.max(total(h), total(r));
  return nAll === 0 ? 0 : overlap(h, r) / nAll;
}
