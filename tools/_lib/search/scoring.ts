// The BM25 formula itself, shared by document ranking (bm25.ts) and passage choice (snippet.ts).

/**
 * The Lucene form of the IDF, ln(1 + (N - n + 0.5) / (n + 0.5)): unlike the original it never goes
 * negative, so a term present in most documents adds a little instead of subtracting.
 */
export function idf(docCount: number, docsWithTerm: number): number {
  return Math.log(1 + (docCount - docsWithTerm + 0.5) / (docsWithTerm + 0.5));
}

/** One term's contribution: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgLen)). */
export function termScore(idfValue: number, tf: number, len: number, avgLen: number, k1: number, b: number): number {
  if (tf <= 0) return 0;
  const norm = avgLen > 0 ? len / avgLen : 1;
  return (idfValue * tf * (k1 + 1)) / (tf + k1 * (1 - b + b * norm));
}
