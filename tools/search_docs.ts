// Ranked full-text search over the finqa corpus: the model's way in to the documents.
import { z, defineTool } from 'rft-endpoints';
import { finqaCorpus } from './_lib/finqa-corpus.js';

export default defineTool({
  name: 'search_docs',
  // It only reads: a call of it that a server restart cut runs again on the trainer's retry.
  idempotent: true,
  description:
    'Search the financial document corpus (reports, press releases, call transcripts) by keywords. ' +
    'Returns the best-matching documents with a short snippet; use read_doc to read one in full.',
  parameters: z.object({
    query: z
      .string()
      .min(1)
      .max(500)
      .describe('Keywords to search for, e.g. "Halvorsen second quarter 2025 revenue"'),
    top_k: z.number().int().min(1).max(10).optional().describe('How many results to return (1-10, default 3)'),
  }),
  async handler({ query, top_k }) {
    const corpus = await finqaCorpus();
    const hits = corpus.index.search(query, top_k ?? 3, { snippetChars: 240 });
    if (hits.length === 0) {
      return { query, results: [], message: `No document matches "${query}". Try other keywords, or list_docs.` };
    }
    return {
      query,
      results: hits.map((h) => ({
        doc_id: h.id,
        title: corpus.byId.get(h.id)?.title ?? h.id,
        score: Math.round(h.score * 100) / 100,
        snippet: h.snippet,
      })),
    };
  },
});
