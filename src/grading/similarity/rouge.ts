// ROUGE as Google's rouge-score computes it (rouge_scorer.RougeScorer, use_stemmer=False): the
// F-measure of n-gram overlap (rouge_1 .. rouge_5) or of the longest common subsequence (rouge_l)
// between the reference ("target") and the answer ("prediction"), on rougeTokens().
import { lcsLength, toIds } from './lcs.js';
import { ngramCounts, overlap, total } from './ngrams.js';
import { rougeTokens } from './tokenize.js';
import { porterStem } from './porter.js';

export interface Prf {
  precision: number;
  recall: number;
  fmeasure: number;
}

function prf(hits: number, predicted: number, target: number): Prf {
  // rouge-score divides by max(count, 1), so an empty side gives 0 rather than NaN.
  const precision = hits / Math.max(predicted, 1);
  const recall = hits / Math.max(target, 1);
  const fmeasure = precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
  return { precision, recall, fmeasure };
}

// rouge-score stems with NLTK's PorterStemmer() in its default mode.
const nltkStem = (w: string) => porterStem(w, 'nltk');

export function rougeN(prediction: string, target: string, n: number, opts: { stem?: boolean } = {}): Prf {
  const stem = opts.stem ? nltkStem : undefined;
  const p = ngramCounts(rougeTokens(prediction, stem), n);
  const t = ngramCounts(rougeTokens(target, stem), n);
  return prf(overlap(p, t), total(p), total(t));
}

export function rougeL(prediction: string, target: string, opts: { stem?: boolean } = {}): Prf {
  const stem = opts.stem ? nltkStem : undefined;
  const p = rougeTokens(prediction, stem);
  const t = rougeTokens(target, stem);
  if (p.length === 0 || t.length === 0) return { precision: 0, recall: 0, fmeasure: 0 };
  const [pi, ti] = toIds(p, t) as [number[], number[]];
  return prf(lcsLength(pi, ti, 'rouge_l'), p.length, t.length);
}
