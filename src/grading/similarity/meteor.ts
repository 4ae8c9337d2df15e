// METEOR as NLTK's meteor_score(references=[reference], hypothesis) computes it, with NLTK's
// defaults alpha 0.9, beta 3, gamma 0.5 and preprocessing str.lower:
//   words are aligned in stages (exact, then Porter stems in NLTK's default mode, then WordNet
//   synonyms), each stage pairing greedily from the last answer word backwards with the last
//   free reference word;
//   P = m / |answer|, R = m / |reference|, Fmean = P R / (alpha P + (1 - alpha) R);
//   penalty = gamma (chunks / m)^beta, where chunks are runs of matches adjacent on both sides;
//   score = (1 - penalty) Fmean.
// The WordNet synonym stage is skipped: answers that only use synonyms of the reference score
// lower than under NLTK with WordNet (test/grading/similarity/nltk-parity.test.ts shows one case). Debian's
// wordnet-base holds the WordNet 3.0 database, but shipping or requiring it for one metric stage is
// not worth it: NLTK 3.8 looks an answer word's synonyms up against the already stemmed reference
// words, so the stage only matches where the reference word is its own stem ("car" / "auto", not
// "big" / "large", stemmed "larg").
// Tokens come from Python's str.split() rules (tokenize.ts); stems count code points (porter.ts).
import { porterStem } from './porter.js';

export type Enum = Array<[index: number, word: string]>;
export type Match = [hyp: number, ref: number];

/**
 * NLTK's _match_enums: for each answer word from the last to the first, the last still-free
 * reference word equal to it. NLTK scans the reference list each time (quadratic, minutes on
 * long texts); a stack of free positions per word gives the same pairs in linear time. Returns
 * the pairs and both lists without the matched words.
 */
export function matchEnums(hyp: Enum, ref: Enum): { matches: Match[]; hyp: Enum; ref: Enum } {
  const free = new Map<string, number[]>();
  ref.forEach(([, w], pos) => {
    const list = free.get(w);
    if (list) list.push(pos);
    else free.set(w, [pos]);
  });
  const matches: Match[] = [];
  const usedHyp = new Set<number>();
  const usedRef = new Set<number>();
  for (let i = hyp.length - 1; i >= 0; i--) {
    const [hi, w] = hyp[i] as [number, string];
    const pos = free.get(w)?.pop();
    if (pos === undefined) continue;
    matches.push([hi, (ref[pos] as [number, string])[0]]);
    usedHyp.add(i);
    usedRef.add(pos);
  }
  return { matches, hyp: hyp.filter((_, i) => !usedHyp.has(i)), ref: ref.filter((_, j) => !usedRef.has(j)) };
}

function countChunks(matches: Match[]): number {
  let chunks = 1;
  for (let i = 0; i < matches.length - 1; i++) {
    const a = matches[i] as Match;
    const b = matches[i + 1] as Match;
    if (!(b[0] === a[0] + 1 && b[1] === a[1] + 1)) chunks++;
  }
  return chunks;
}

export interface MeteorParams {
  alpha?: number;
  beta?: number;
  gamma?: number;
}

export function meteor(hypothesis: string[], reference: string[], params: MeteorParams = {}): number {
  const { alpha = 0.9, beta = 3, gamma = 0.5 } = params;
  const hypLen = hypothesis.length;
  const refLen = reference.length;
  const exact = matchEnums(
    hypothesis.map((w, i): [number, string] => [i, w.toLowerCase()]),
    reference.map((w, i): [number, string] => [i, w.toLowerCase()]),
  );
  const stem = (list: Enum): Enum => list.map(([i, w]) => [i, porterStem(w)]);
  const stemmed = matchEnums(stem(exact.hyp), stem(exact.ref));
  const matches = [...exact.matches, ...stemmed.matches].sort((a, b) => a[0] - b[0]);
  const m = matches.length;
  if (m === 0 || hypLen === 0 || refLen === 0) return 0;
  const precision = m / hypLen;
  const recall = m / refLen;
  const fmean = (precision * recall) / (alpha * precision + (1 - alpha) * recall);
  const penalty = gamma * (countChunks(matches) / m) ** beta;
  return (1 - penalty) * fmean;
}
