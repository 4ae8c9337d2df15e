// Where the finqa tools find their documents: examples/finqa/docs, resolved from this module, so
// the same relative path holds in this repo, in a project made by `rft-endpoints init --example
// finqa` (which copies the documents there) and in dist/ (`npm run build` copies them too). To
// serve other documents, replace the .md files in that folder.
import { fileURLToPath } from 'node:url';
import { corpusFor, type Corpus } from './search/index.js';

export const FINQA_DOCS_DIR = fileURLToPath(new URL('../../examples/finqa/docs/', import.meta.url));

export function finqaCorpus(): Promise<Corpus> {
  return corpusFor(FINQA_DOCS_DIR);
}
