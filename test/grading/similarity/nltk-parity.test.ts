// BLEU, GLEU, METEOR and the Porter stemmer against values NLTK computed on the same inputs
// (test/grading/fixtures/nltk-parity.py wrote nltk-parity.json; Debian's python3-nltk 3.8):
// Python's str.split() whitespace, tokens holding U+0000, and words with characters outside the BMP.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { localSimilarity, meteor, porterStem, sentenceBleu, sentenceGleu } from '../../../src/grading/similarity/index.js';
import { whitespaceTokens } from '../../../src/grading/similarity/tokenize.js';

interface Case {
  name: string;
  hypothesis: string;
  reference: string;
  hypothesis_tokens: string[];
  bleu_method3: number;
  bleu_none: number;
  gleu: number;
  meteor: number;
  meteor_wordnet?: number;
}

const fixture = JSON.parse(readFileSync(new URL('../fixtures/nltk-parity.json', import.meta.url), 'utf8')) as {
  cases: Case[];
  stems: Record<string, string>;
};

describe('parity with NLTK', () => {
  it.each(fixture.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const h = whitespaceTokens(c.hypothesis);
    const r = whitespaceTokens(c.reference);
    expect(h).toEqual(c.hypothesis_tokens);
    expect(sentenceBleu(h, [r])).toBeCloseTo(c.bleu_method3, 12);
    expect(sentenceBleu(h, [r], 'none')).toBeCloseTo(c.bleu_none, 12);
    expect(sentenceGleu(h, r)).toBeCloseTo(c.gleu, 12);
    expect(meteor(h, r)).toBeCloseTo(c.meteor, 12);
    // What OpenAI's text_similarity config runs: the same tokens and scores.
    expect(localSimilarity('gleu', c.hypothesis, c.reference)).toBeCloseTo(c.gleu, 12);
  });

  it('stems as NLTK\'s PorterStemmer (NLTK_EXTENSIONS) does, counting code points', () => {
    const ours = Object.fromEntries(Object.keys(fixture.stems).map((w) => [w, porterStem(w)]));
    expect(ours).toEqual(fixture.stems);
  });

  it('leaves out WordNet synonyms, so a synonym-only match scores below NLTK with WordNet (documented)', () => {
    const c = fixture.cases.find((x) => x.name.startsWith('synonyms'))!;
    expect(c.meteor_wordnet).toBeGreaterThan(c.meteor + 0.3);
    expect(meteor(whitespaceTokens(c.hypothesis), whitespaceTokens(c.reference))).toBeCloseTo(c.meteor, 12);
  });
});
