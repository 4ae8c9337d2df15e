// Expected values come from the reference implementations' documented examples (NLTK docstrings,
// the RapidFuzz and rouge-score READMEs) or are worked by hand in the comments.
import { describe, expect, it } from 'vitest';
import {
  fuzzyRatio,
  localSimilarity,
  LOCAL_METRICS,
  meteor,
  porterStem,
  rougeL,
  rougeN,
  sentenceBleu,
  sentenceGleu,
} from '../../../src/grading/similarity/index.js';
import { lcsLength } from '../../../src/grading/similarity/lcs.js';

const split = (s: string) => s.split(' ');
// NLTK's bleu_score / meteor_score docstring sentences.
const hyp1 = split('It is a guide to action which ensures that the military always obeys the commands of the party');
const ref1 = split('It is a guide to action that ensures that the military will forever heed Party commands');
const ref2 = split('It is the guiding principle which guarantees the military forces always being under the command of the Party');
const ref3 = split('It is the practical guide for the army always to heed the directions of the party');

describe('lcsLength (bit-parallel)', () => {
  it('agrees with the textbook dynamic program on random sequences longer than one word', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 4;
    for (let t = 0; t < 20; t++) {
      const a = Array.from({ length: 30 + t * 7 }, rnd);
      const b = Array.from({ length: 50 + t * 3 }, rnd);
      const dp = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
      for (let i = 1; i <= a.length; i++)
        for (let j = 1; j <= b.length; j++)
          dp[i]![j] = a[i - 1] === b[j - 1] ? dp[i - 1]![j - 1]! + 1 : Math.max(dp[i - 1]![j]!, dp[i]![j - 1]!);
      expect(lcsLength(a, b)).toBe(dp[a.length]![b.length]);
    }
  });
});

describe('fuzzy_match (RapidFuzz fuzz.ratio / 100)', () => {
  it('matches the RapidFuzz README example', () => {
    // fuzz.ratio("this is a test", "this is a test!") = 96.55: LCS 14, 2*14/(14+15) = 28/29
    expect(fuzzyRatio('this is a test', 'this is a test!')).toBeCloseTo(28 / 29, 12);
  });

  it('computes 2*LCS/(|a|+|b|)', () => {
    // kitten / sitting: LCS "ittn" = 4, 8/13
    expect(fuzzyRatio('kitten', 'sitting')).toBeCloseTo(8 / 13, 12);
  });

  it('counts code points, not UTF-16 units', () => {
    expect(fuzzyRatio('café', 'cafe')).toBeCloseTo(0.75, 12); // LCS 3 of 4 + 4
    expect(fuzzyRatio('😀a', 'a')).toBeCloseTo(2 / 3, 12); // 2 code points + 1
  });

  it('scores identical strings 1, two empty strings 1 and one empty string 0', () => {
    expect([fuzzyRatio('abc', 'abc'), fuzzyRatio('', ''), fuzzyRatio('', 'abc')]).toEqual([1, 1, 0]);
  });

  it('is case-sensitive, as RapidFuzz without a processor', () => {
    expect(fuzzyRatio('ABC', 'abc')).toBe(0);
  });
});

describe('bleu (NLTK sentence_bleu, 4-gram uniform weights)', () => {
  it('reproduces the NLTK docstring value with three references and no smoothing', () => {
    expect(sentenceBleu(hyp1, [ref1, ref2, ref3], 'none')).toBeCloseTo(0.5045666840058485, 12);
  });

  it('smooths a short answer with NIST geometric smoothing (method3) by default', () => {
    // hyp "the cat sat" vs "the cat sat on the mat": p1 = p2 = p3 = 1, p4 has no 4-gram: 1/(2^1 * 1).
    // exp(0.25 ln 0.5) = 0.8409, brevity penalty exp(1 - 6/3) = 0.3679, product 0.30935
    const v = sentenceBleu(split('the cat sat'), [split('the cat sat on the mat')]);
    expect(v).toBeCloseTo(Math.pow(0.5, 0.25) * Math.exp(-1), 12);
  });

  it('gives about 0 for that short answer without smoothing, as NLTK does', () => {
    expect(sentenceBleu(split('the cat sat'), [split('the cat sat on the mat')], 'none')).toBeLessThan(1e-70);
  });

  it('adds epsilon 0.1 to empty counts with method1', () => {
    const v = sentenceBleu(split('the cat sat'), [split('the cat sat on the mat')], 'method1');
    expect(v).toBeCloseTo(Math.pow(0.1, 0.25) * Math.exp(-1), 12);
  });

  it('is 1 for an identical sentence and 0 with no shared word', () => {
    expect(sentenceBleu(ref1, [ref1])).toBeCloseTo(1, 12);
    expect(sentenceBleu(split('x y z w'), [ref1])).toBe(0);
  });

  it('is 0 for an empty answer', () => {
    expect(sentenceBleu([], [ref1])).toBe(0);
  });
});

describe('gleu (NLTK sentence_gleu, n = 1..4)', () => {
  it('counts matches over the larger n-gram total', () => {
    // hyp1: 18+17+16+15 = 66 n-grams; ref1: 58. Matches (case-sensitive): 11 unigrams, 8 bigrams,
    // 6 trigrams, 4 four-grams = 29. 29/66.
    expect(sentenceGleu(hyp1, ref1)).toBeCloseTo(29 / 66, 12);
  });

  it('reproduces the NLTK docstring values', () => {
    // "the the the ..." against "the cat is on the mat": 2 matching unigrams of 22 answer n-grams
    expect(sentenceGleu(split('the the the the the the the'), split('the cat is on the mat'))).toBeCloseTo(2 / 22, 12);
    const hyp2 = split('It is to insure the troops forever hearing the activity guidebook that party direct');
    expect(sentenceGleu(hyp2, ref1)).toBeGreaterThan(0.1206);
    expect(sentenceGleu(hyp2, ref1)).toBeLessThan(0.1207);
  });

  it('is min(precision, recall) for a short answer', () => {
    // "the cat sat": 6 n-grams, all in the reference; the reference has 6+5+4+3 = 18. 6/18
    expect(sentenceGleu(split('the cat sat'), split('the cat sat on the mat'))).toBeCloseTo(1 / 3, 12);
  });

  it('is 0 when both sides are empty', () => {
    expect(sentenceGleu([], [])).toBe(0);
  });
});

describe('meteor (NLTK meteor_score, alpha 0.9, beta 3, gamma 0.5, no WordNet)', () => {
  it('scores the NLTK docstring pair as NLTK would without WordNet', () => {
    // 12 matches of 18 answer and 16 reference words: P 2/3, R 3/4, Fmean = PR/(0.9P+0.1R) = 20/27;
    // 6 chunks: penalty 0.5 (6/12)^3 = 0.0625; (1 - 0.0625) * 20/27 = 0.69444.
    // NLTK's docstring says 0.7398: WordNet also pairs always~forever, giving 13 matches in 7
    // chunks: P 13/18, R 13/16, Fmean 0.80247, penalty 0.5 (7/13)^3 = 0.07806, 0.7398.
    expect(meteor(hyp1, ref1)).toBeCloseTo(0.9375 * (20 / 27), 12);
  });

  it('matches inflected words through the Porter stem', () => {
    // the/the exact, cats~cat and running~runs by stem: 3 matches in 1 chunk,
    // penalty 0.5 (1/3)^3 = 1/54, Fmean 1
    expect(meteor(split('the cats running'), split('the cat runs'))).toBeCloseTo(1 - 1 / 54, 12);
  });

  it('lowercases before matching', () => {
    expect(meteor(['Paris'], ['paris'])).toBeCloseTo(0.5, 12); // one match, one chunk: penalty 0.5
  });

  it('is 0 with no match and for empty input', () => {
    expect(meteor(split('non matching hypothesis'), split('this is a cat'))).toBe(0);
    expect(meteor([], ref1)).toBe(0);
  });
});

describe('rouge (Google rouge-score, F-measure)', () => {
  const target = 'The quick brown fox jumps over the lazy dog';
  const prediction = 'The quick brown dog jumps on the log.';

  it('reproduces the rouge-score README example for rouge1 and rougeL', () => {
    expect(rougeN(prediction, target, 1)).toEqual({ precision: 0.75, recall: 2 / 3, fmeasure: 12 / 17 });
    const l = rougeL(prediction, target);
    expect(l.precision).toBeCloseTo(0.625, 12);
    expect(l.recall).toBeCloseTo(5 / 9, 12);
    expect(l.fmeasure).toBeCloseTo(0.5882352941176471, 12);
  });

  it('computes rouge2 from shared bigrams', () => {
    // shared: "the quick", "quick brown" = 2; P 2/7, R 2/8, F = 4/15
    expect(rougeN(prediction, target, 2).fmeasure).toBeCloseTo(4 / 15, 12);
  });

  it('gives 0 for an n larger than the text', () => {
    expect(rougeN('a b c', 'a b c', 5).fmeasure).toBe(0);
  });

  it('tokenizes like rouge-score: lowercase, non [a-z0-9] dropped', () => {
    // "café" becomes "caf": [caf, au, lait] vs [cafe, au, lait]: 2 of 3 both ways
    expect(rougeN('Café au lait', 'cafe au lait', 1).fmeasure).toBeCloseTo(2 / 3, 12);
    expect(rougeN('Hello, WORLD!', 'hello world', 1).fmeasure).toBe(1);
  });

  it('stems only when asked, and only tokens longer than 3 letters', () => {
    expect(rougeN('running dogs', 'runs dog', 1).fmeasure).toBe(0);
    expect(rougeN('running dogs', 'runs dog', 1, { stem: true }).fmeasure).toBe(1);
  });

  it('gives 0 when a side is empty', () => {
    expect(rougeL('', target).fmeasure).toBe(0);
    expect(rougeN('', target, 1).fmeasure).toBe(0);
  });
});

describe('porter stemmer', () => {
  // Full-algorithm outputs of the published Porter algorithm (the paper's step examples carried
  // through every step); the same in both modes unless listed below.
  it.each([
    ['caresses', 'caress'],
    ['ponies', 'poni'],
    ['cats', 'cat'],
    ['feed', 'feed'],
    ['agreed', 'agre'],
    ['plastered', 'plaster'],
    ['motoring', 'motor'],
    ['sized', 'size'],
    ['hopping', 'hop'],
    ['falling', 'fall'],
    ['filing', 'file'],
    ['happy', 'happi'],
    ['relational', 'relat'],
    ['conditional', 'condit'],
    ['generalizations', 'gener'],
    ['oscillators', 'oscil'],
    ['hopeful', 'hope'],
    ['goodness', 'good'],
    ['replacement', 'replac'],
    ['adjustment', 'adjust'],
    ['adoption', 'adopt'],
    ['electrical', 'electr'],
    ['triplicate', 'triplic'],
    ['cease', 'ceas'],
    ['controll', 'control'],
    ['roll', 'roll'],
    ['radically', 'radic'],
    ['generously', 'gener'],
  ])('%s -> %s in both modes', (word, stem) => {
    expect(porterStem(word, 'original')).toBe(stem);
    expect(porterStem(word, 'nltk')).toBe(stem);
  });

  // Where NLTK's default mode (used by its meteor_score) departs from the paper.
  it.each([
    ['ties', 'ti', 'tie'], // "ies" on a 4-letter word keeps "ie"
    ['dies', 'di', 'die'],
    ['flies', 'fli', 'fli'],
    ['died', 'di', 'die'], // "ied" likewise
    ['spied', 'spi', 'spi'],
    ['dying', 'dy', 'die'], // irregular forms
    ['skies', 'ski', 'sky'],
    ['news', 'new', 'news'],
    ['enjoy', 'enjoi', 'enjoy'], // y -> i only after a consonant
    ['geology', 'geologi', 'geolog'], // logi -> log
    ['hopefully', 'hopefulli', 'hope'], // fulli -> ful
    ['owed', 'ow', 'owe'], // two-letter vowel-consonant stem counts as *o
    ['possibly', 'possibli', 'possibl'], // bli -> ble instead of abli -> able
  ])('%s -> %s (original) / %s (nltk)', (word, original, nltk) => {
    expect(porterStem(word, 'original')).toBe(original);
    expect(porterStem(word, 'nltk')).toBe(nltk);
  });

  it('leaves one- and two-letter words alone in nltk mode', () => {
    expect([porterStem('is'), porterStem('as'), porterStem('a')]).toEqual(['is', 'as', 'a']);
  });
});

describe('localSimilarity', () => {
  it('scores identical texts 1 on every metric', () => {
    const text = 'the quarterly revenue grew by four percent to 4.2 million dollars';
    for (const m of LOCAL_METRICS) expect(localSimilarity(m, text, text), m).toBeCloseTo(m === 'meteor' ? meteor(split(text), split(text)) : 1, 12);
  });

  it('scores texts with nothing in common 0 on every metric', () => {
    for (const m of LOCAL_METRICS) expect(localSimilarity(m, 'aaaa bbbb', 'cccc-dddd'), m).toBe(0);
  });
});

describe('long texts', () => {
  it('aligns METEOR words exactly as the quadratic NLTK scan does', async () => {
    const { matchEnums } = await import('../../../src/grading/similarity/meteor.js');
    // NLTK's _match_enums, transcribed: scan hyp from the end, ref from the end, pop on match.
    const nltk = (hyp: Array<[number, string]>, ref: Array<[number, string]>) => {
      const h = [...hyp];
      const r = [...ref];
      const out: Array<[number, number]> = [];
      for (let i = h.length - 1; i >= 0; i--) {
        for (let j = r.length - 1; j >= 0; j--) {
          if (h[i]![1] === r[j]![1]) {
            out.push([h[i]![0], r[j]![0]]);
            h.splice(i, 1);
            r.splice(j, 1);
            break;
          }
        }
      }
      return { matches: out, hyp: h, ref: r };
    };
    let seed = 3;
    const word = () => 'abcdef'[(seed = (seed * 1103515245 + 12345) % 2 ** 31) % 6]!;
    for (let t = 0; t < 10; t++) {
      const hyp = Array.from({ length: 40 }, (_, i): [number, string] => [i, word()]);
      const ref = Array.from({ length: 35 }, (_, i): [number, string] => [i, word()]);
      expect(matchEnums(hyp, ref)).toEqual(nltk(hyp, ref));
    }
  });

  it('grades METEOR on 200 000-word texts in linear time', () => {
    const words = Array.from({ length: 200_000 }, (_, i) => `w${i % 5000}`);
    const started = Date.now();
    expect(meteor(words, [...words].reverse())).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('refuses a character LCS too large to run on the event loop', () => {
    const big = 'a'.repeat(60_000);
    let code: string | undefined;
    try {
      fuzzyRatio(big, big);
    } catch (e) {
      code = (e as { code?: string }).code;
    }
    expect(code).toBe('RFT_ERR_GRADING_TOO_LARGE');
  });
});
