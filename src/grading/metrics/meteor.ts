// METEOR as NLTK's meteor_score(references=[reference], hypothesis) computes it, with NLTK's
// defaults alpha 0.9, beta 3, gamma 0.5 and preprocessing str.lower:
//   words are aligned in stages (exact, then Porter stems, then WordNet synonyms), each stage
//   pairing greedily from the last answer word backwards with the last free reference word;
//   P = m / |answer|, R = m / |reference|, Fmean = P R / (alpha P + (1 - alpha) R);
//   penalty = gamma (chunks / m)^beta, where chunks are runs of matches adjacent on both sides;
//   score = (1 - penalty) Fmean.
// WordNet is not available offline, so the synonym stage is skipped: answers that only use
// synonyms of the reference score lower than under NLTK with WordNet installed.
import { porterStem } from './porter.js';

type Enum = Array<[index: number, word: string]>;
type Match = [hyp: number, ref: number];

/** NLTK's _match_enums: greedy pairing, removing matched words from both lists. */
function matchEnums(hyp: Enum, ref: Enum): Match[] {
  const matches: Match[] = [];
  for (let i = hyp.length - 1; i >= 0; i--) {
    const h = hyp[i] as [number, string];
    for (let j = ref.length - 1; j >= 0; j--) {
      const r = ref[j] as [number, string];
      if (h[1] === r[1]) {
        matches.push([h[0], r[0]]);
        hyp.splice(i, 1);
        ref.splice(j, 1);
        break;
      }
    }
  }
  return matches;
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
  let hyp: Enum = hypothesis.map((w, i) => [i, w.toLowerCase()]);
  let ref: Enum = reference.map((w, i) => [i, w.toLowerCase()]);
  const hypLen = hyp.length;
  const refLen = ref.length;
  const exact = matchEnums(hyp, ref);
  hyp = hyp.map(([i, w]) => [i, porterStem(w)]);
  ref = ref.map(([i, w]) => [i, porterStem(w)]);
  const stemmed = matchEnums(hyp, ref);
  const matches = [...exact, ...stemmed].sort((a, b) => a[0] - b[0]);
  const m = matches.length;
  if (m === 0 || hypLen === 0 || refLen === 0) return 0;
  const precision = m / hypLen;
  const recall = m / refLen;
  const fmean = (precision * recall) / (alpha * precision + (1 - alpha) * recall);
  const penalty = gamma * (countChunks(matches) / m) ** beta;
  return (1 - penalty) * fmean;
}
