// fuzzy_match = RapidFuzz fuzz.ratio / 100: the normalized Indel similarity of the two strings,
// 1 - indel_distance / (|a| + |b|) = 2 * LCS(a, b) / (|a| + |b|), over code points, with no
// preprocessing (RapidFuzz 3 default). Two empty strings are identical: 1.
import { lcsLength } from './lcs.js';
import { codePoints } from './tokenize.js';

export function fuzzyRatio(a: string, b: string): number {
  const x = codePoints(a);
  const y = codePoints(b);
  if (x.length + y.length === 0) return 1;
  return (2 * lcsLength(x, y, 'fuzzy_match')) / (x.length + y.length);
}
