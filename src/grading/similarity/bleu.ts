// BLEU as NLTK's sentence_bleu(references=[reference], hypothesis, weights=(0.25,)*4) computes it:
// clipped (modified) n-gram precisions p1..p4, geometric mean, times the brevity penalty
// exp(1 - r/c) when the answer (c tokens) is shorter than the reference (r tokens).
//
// Smoothing: NLTK's default (method0) has none, so any answer with no matching 4-gram, which is
// every answer under four words, scores about 0. This server uses NLTK's method3 by default, the
// NIST geometric smoothing of mteval-v13a, which sacrebleu's sentence_bleu also uses: the k-th
// n-gram order with no match counts as 1 / (2^k * total). It has no free parameter and keeps
// short answers graded. 'none' reproduces NLTK's default exactly (including its
// float_info.min stand-in for zero precisions); 'method1' adds epsilon 0.1 to zero numerators.
import { ngramCounts, overlap, total } from './ngrams.js';

export type BleuSmoothing = 'method3' | 'none' | 'method1';

const FLOAT_MIN = 2.2250738585072014e-308; // Python's sys.float_info.min, NLTK's method0 stand-in

/** Per n-gram, the largest count in any reference: NLTK's clipping bound. */
function maxRefCounts(references: string[][], n: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const ref of references) {
    for (const [k, c] of ngramCounts(ref, n)) out.set(k, Math.max(out.get(k) ?? 0, c));
  }
  return out;
}

/** The reference length closest to the answer's, the shorter on a tie (NLTK's closest_ref_length). */
function closestRefLength(references: string[][], c: number): number {
  let best = references[0]?.length ?? 0;
  for (const ref of references) {
    const r = ref.length;
    if (Math.abs(r - c) < Math.abs(best - c) || (Math.abs(r - c) === Math.abs(best - c) && r < best)) best = r;
  }
  return best;
}

/** Sentence BLEU of one answer against one or more references (OpenAI configs have one). */
export function sentenceBleu(hypothesis: string[], references: string[][], smoothing: BleuSmoothing = 'method3'): number {
  const maxN = 4;
  const nums: number[] = [];
  const dens: number[] = [];
  for (let n = 1; n <= maxN; n++) {
    const h = ngramCounts(hypothesis, n);
    nums.push(overlap(h, maxRefCounts(references, n)));
    // NLTK: Fraction(numerator, max(1, denominator))
    dens.push(Math.max(1, total(h)));
  }
  // NLTK returns 0 outright when no unigram matches.
  if (nums[0] === 0) return 0;
  const c = hypothesis.length;
  const r = closestRefLength(references, c);
  const bp = c > r ? 1 : c === 0 ? 0 : Math.exp(1 - r / c);
  let incvnt = 1;
  let logSum = 0;
  for (let i = 0; i < maxN; i++) {
    const num = nums[i] as number;
    const den = dens[i] as number;
    let p: number;
    if (num > 0) p = num / den;
    else if (smoothing === 'method3') p = 1 / (2 ** incvnt++ * den);
    else if (smoothing === 'method1') p = 0.1 / den;
    else p = FLOAT_MIN;
    logSum += 0.25 * Math.log(p);
  }
  return bp * Math.exp(logSum);
}
