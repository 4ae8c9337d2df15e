// Where the finqa tools find their documents. Read at call time (not import time) so a deployment
// or a test can point FINQA_DOCS_DIR elsewhere; the default is the example corpus in this repo.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { corpusFor, type Corpus } from './search/index.js';

// From tools/_lib/ in the source tree; one level more from dist/tools/_lib/ after `npm run build`
// (tsc does not copy the .md documents into dist/).
const CANDIDATES = ['../../examples/finqa/docs/', '../../../examples/finqa/docs/'].map((p) => fileURLToPath(new URL(p, import.meta.url)));

export function finqaDocsDir(): string {
  return process.env.FINQA_DOCS_DIR || (CANDIDATES.find((d) => existsSync(d)) ?? (CANDIDATES[0] as string));
}

export function finqaCorpus(): Promise<Corpus> {
  return corpusFor(finqaDocsDir());
}
