// n-gram counting shared by BLEU, GLEU and ROUGE-N. Keys join tokens with U+0000, which no
// tokenizer here produces.

export function ngramCounts(tokens: string[], n: number, into = new Map<string, number>()): Map<string, number> {
  for (let i = 0; i + n <= tokens.length; i++) {
    const key = tokens.slice(i, i + n).join('\u0000');
    into.set(key, (into.get(key) ?? 0) + 1);
  }
  return into;
}

/** Sum over keys of min(a[key], b[key]): the clipped overlap of two multisets. */
export function overlap(a: Map<string, number>, b: Map<string, number>): number {
  let total = 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const [k, c] of small) {
    const d = large.get(k);
    if (d !== undefined) total += Math.min(c, d);
  }
  return total;
}

export function total(counts: Map<string, number>): number {
  let t = 0;
  for (const c of counts.values()) t += c;
  return t;
}
