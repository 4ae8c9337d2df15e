// Reads one document a page at a time: pages keep each output short enough for the model to use.
import { z, defineTool, errors } from 'rft-endpoints';
import { closestIds, paginate } from './_lib/search/index.js';
import { finqaCorpus } from './_lib/finqa-corpus.js';

/** About a screenful; whole lines only, so a table row is never split across pages. */
export const PAGE_CHARS = 1500;

export default defineTool({
  name: 'read_doc',
  // It only reads: a call of it that a server restart cut runs again on the trainer's retry.
  idempotent: true,
  description: `Read a document of the financial corpus by doc_id, one page (about ${PAGE_CHARS} characters) at a time. The reply says how many pages there are.`,
  parameters: z.object({
    doc_id: z.string().min(1).max(200).describe('The document id, as returned by search_docs or list_docs'),
    page: z.number().int().min(1).max(1000).optional().describe('Page number, starting at 1 (default 1)'),
  }),
  async handler({ doc_id, page }) {
    const corpus = await finqaCorpus();
    // Forgive the usual slips: surrounding spaces, case, a ".md" suffix.
    const id = doc_id.trim().toLowerCase().replace(/\.md$/, '');
    const doc = corpus.byId.get(id);
    if (!doc) throw errors.docNotFound(doc_id, closestIds(id, [...corpus.byId.keys()]));
    const pages = paginate(doc.text, PAGE_CHARS);
    const n = page ?? 1;
    if (n > pages.length) {
      throw errors.toolInput(`page ${n} does not exist: "${doc.id}" has ${pages.length} page(s)`, {
        doc_id: doc.id,
        pages: pages.length,
      });
    }
    return { doc_id: doc.id, title: doc.title, page: n, pages: pages.length, text: pages[n - 1] };
  },
});
