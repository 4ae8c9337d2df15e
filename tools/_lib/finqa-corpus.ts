// Where the finqa tools find their documents. Read at call time (not import time) so a deployment
// or a test can point FINQA_DOCS_DIR elsewhere; the default is the example corpus in this repo.
import { fileURLToPath } from 'node:url';
import { corpusFor, type Corpus } from '../../src/search/index.js';

export function finqaDocsDir(): string {
  return process.env.FINQA_DOCS_DIR || fileURLToPath(new URL('../../examples/finqa/docs/', import.meta.url));
}

export function finqaCorpus(): Promise<Corpus> {
  return corpusFor(finqaDocsDir());
}
