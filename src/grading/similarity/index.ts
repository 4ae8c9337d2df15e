// The text_similarity metrics that run locally (everything but cosine, which needs embeddings).
// `input` is the answer, `reference` the expected text, as in OpenAI's grader config.
import { sentenceBleu } from './bleu.js';
import { fuzzyRatio } from './fuzzy.js';
import { sentenceGleu } from './gleu.js';
import { meteor } from './meteor.js';
import { rougeL, rougeN } from './rouge.js';
import { whitespaceTokens } from './tokenize.js';

export const LOCAL_METRICS = [
  'fuzzy_match',
  'bleu',
  'gleu',
  'meteor',
  'rouge_1',
  'rouge_2',
  'rouge_3',
  'rouge_4',
  'rouge_5',
  'rouge_l',
] as const;
export type LocalMetric = (typeof LOCAL_METRICS)[number];

export function localSimilarity(metric: LocalMetric, input: string, reference: string): number {
  switch (metric) {
    case 'fuzzy_match':
      return fuzzyRatio(input, reference);
    case 'bleu':
      return sentenceBleu(whitespaceTokens(input), [whitespaceTokens(reference)]);
    case 'gleu':
      return sentenceGleu(whitespaceTokens(input), whitespaceTokens(reference));
    case 'meteor':
      return meteor(whitespaceTokens(input), whitespaceTokens(reference));
    case 'rouge_l':
      return rougeL(input, reference).fmeasure;
    default:
      return rougeN(input, reference, Number(metric.slice('rouge_'.length))).fmeasure;
  }
}

export { sentenceBleu, sentenceGleu, meteor, fuzzyRatio, rougeN, rougeL };
export { porterStem } from './porter.js';
