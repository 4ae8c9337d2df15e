// "Did you mean ...": the known ids nearest to a mistyped one, so a tool error tells the model
// what to try next instead of only what went wrong.

/** Levenshtein distance (insert, delete, substitute all cost 1). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const sub = (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      cur.push(Math.min(sub, (prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1));
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

function parts(id: string): Set<string> {
  return new Set(id.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean));
}

/**
 * Up to `n` ids, nearest first: ids sharing more words with `wanted` ("halvorsen", "q2") rank
 * first, then smaller edit distance. Ids sharing nothing and more than half-rewritten are left out.
 */
export function closestIds(wanted: string, ids: readonly string[], n = 3): string[] {
  const w = wanted.toLowerCase();
  const wParts = parts(w);
  return ids
    .map((id) => {
      let shared = 0;
      for (const p of parts(id)) if (wParts.has(p)) shared++;
      return { id, shared, dist: editDistance(w, id.toLowerCase()) };
    })
    .filter((c) => c.shared > 0 || c.dist <= Math.max(w.length, c.id.length) / 2)
    .sort((x, y) => y.shared - x.shared || x.dist - y.dist || (x.id < y.id ? -1 : 1))
    .slice(0, n)
    .map((c) => c.id);
}
