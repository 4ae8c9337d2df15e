// Ranked full-text search (Okapi BM25) and the document-corpus helpers the finqa tools use.
export { Bm25Index, idf, termScore } from './bm25.js';
export type { Bm25Document, Bm25Options, SearchHit, SearchOptions } from './bm25.js';
export { tokenize, tokenizeWithOffsets, stem, STOPWORDS } from './tokenize.js';
export type { Token, TokenizeOptions } from './tokenize.js';
export { loadCorpus, corpusFor, titleOf } from './corpus.js';
export type { Corpus, CorpusDoc } from './corpus.js';
export { paginate } from './paginate.js';
export { closestIds, editDistance } from './closest.js';
