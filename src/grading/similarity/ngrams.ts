// n-gram counting shared by BLEU, GLEU and ROUGE-N. A key is each token prefixed with its length
// ("3:the3:cat"), which no two different n-grams share, whatever characters the tokens hold
// (a separator such as U+0000 can itself be inside a token: "a\0b" would meet the bigram a, b).

/** The key of tokens[start, end): length-prefixed, so it cannot collide with another n-gram's. */
export function ngramKey(tokens: readonly string[], start: number, end: number): string {
  let key = '';
  for (let i = start; i < end; i++) key += `${(tokens[i] as string).length}:${tokens[i] as string}`;
  return key;
}

export function ngramCounts(tokens: string[], n: number, into = new Map<string, number>()): Map<string, number> {
  for (let i = 0; i + n <= tokens.length; i++) {
    const key = ngramKey(tokens, i, i + n);
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
