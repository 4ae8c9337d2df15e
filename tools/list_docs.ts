// The corpus's table of contents, so the model can browse when keywords fail.
import { z, defineTool } from 'rft-endpoints';
import { finqaCorpus } from './_lib/finqa-corpus.js';

export default defineTool({
  name: 'list_docs',
  // It only reads: a call of it that a server restart cut runs again on the trainer's retry.
  idempotent: true,
  description: 'List the documents in the financial corpus (doc_id and title), optionally only those whose doc_id starts with a prefix.',
  parameters: z.object({
    prefix: z
      .string()
      .max(200)
      .optional()
      .describe('Only list documents whose doc_id starts with this text, e.g. "bluefinch" (case-insensitive)'),
  }),
  async handler({ prefix }) {
    const corpus = await finqaCorpus();
    const p = (prefix ?? '').trim().toLowerCase();
    const docs = corpus.docs.filter((d) => d.id.toLowerCase().startsWith(p)).map((d) => ({ doc_id: d.id, title: d.title }));
    if (docs.length === 0) {
      return { count: 0, docs, message: `No doc_id starts with "${prefix ?? ''}". Call list_docs without a prefix to see all.` };
    }
    return { count: docs.length, docs };
  },
});
