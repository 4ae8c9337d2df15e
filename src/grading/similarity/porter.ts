// The Porter stemmer (M.F. Porter, "An algorithm for suffix stripping", Program 14(3), 1980), in
// the two variants NLTK names:
// - 'nltk' (default, NLTK's PorterStemmer() default NLTK_EXTENSIONS, which meteor_score uses):
//   irregular forms (dying -> die, skies -> sky, news, proceed ...); "ies"/"ied" on 4-letter words
//   keep "ie" (dies -> die, but flies -> fli); y -> i only after a consonant that is not the whole
//   stem (enjoy stays, happy -> happi); "alli" -> "al" is tried first and step 2 runs again;
//   "bli" -> "ble" instead of "abli" -> "able"; extra step-2 rules "fulli" -> "ful" and
//   "logi" -> "log"; a two-letter vowel-consonant stem counts as *o (owed -> owe); words of one or
//   two letters are left alone.
// - 'original': the algorithm exactly as published.
// Input is expected in lowercase (METEOR lowercases first).

export type PorterMode = 'nltk' | 'original';

const IRREGULAR: Record<string, string> = {
  sky: 'sky',
  skies: 'sky',
  dying: 'die',
  lying: 'lie',
  tying: 'tie',
  news: 'news',
  innings: 'inning',
  inning: 'inning',
  outings: 'outing',
  outing: 'outing',
  cannings: 'canning',
  canning: 'canning',
  howe: 'howe',
  proceed: 'proceed',
  exceed: 'exceed',
  succeed: 'succeed',
};

const isConsonant = (w: string, i: number): boolean => {
  const c = w[i];
  if (c === 'a' || c === 'e' || c === 'i' || c === 'o' || c === 'u') return false;
  // y is a consonant at the start and after a vowel, a vowel after a consonant.
  return c !== 'y' || i === 0 || !isConsonant(w, i - 1);
};

/** m in [C](VC){m}[V]: the number of vowel-consonant transitions. */
function measure(stem: string): number {
  let m = 0;
  for (let i = 1; i < stem.length; i++) if (!isConsonant(stem, i - 1) && isConsonant(stem, i)) m++;
  return m;
}

const positive = (stem: string): boolean => measure(stem) > 0;

function hasVowel(stem: string): boolean {
  for (let i = 0; i < stem.length; i++) if (!isConsonant(stem, i)) return true;
  return false;
}

const endsDoubleConsonant = (w: string): boolean =>
  w.length >= 2 && w[w.length - 1] === w[w.length - 2] && isConsonant(w, w.length - 1);

/** *o: the stem ends consonant-vowel-consonant, the last not w, x or y (nltk: or is vowel-consonant). */
function endsCvc(w: string, mode: PorterMode): boolean {
  const n = w.length;
  if (n >= 3 && isConsonant(w, n - 3) && !isConsonant(w, n - 2) && isConsonant(w, n - 1) && !'wxy'.includes(w[n - 1] as string)) {
    return true;
  }
  return mode === 'nltk' && n === 2 && !isConsonant(w, 0) && isConsonant(w, 1);
}

type Rule = [suffix: string, replacement: string, ok: (stem: string) => boolean];

/** The first rule whose suffix matches decides: it applies if its condition holds, else nothing does. */
function applyFirst(w: string, rules: Rule[]): string {
  for (const [suffix, rep, ok] of rules) {
    if (w.endsWith(suffix)) {
      const stem = w.slice(0, w.length - suffix.length);
      return ok(stem) ? stem + rep : w;
    }
  }
  return w;
}

function step1a(w: string, mode: PorterMode): string {
  if (mode === 'nltk' && w.length === 4 && w.endsWith('ies')) return w.slice(0, -1);
  const always = () => true;
  return applyFirst(w, [
    ['sses', 'ss', always],
    ['ies', 'i', always],
    ['ss', 'ss', always],
    ['s', '', always],
  ]);
}

function step1b(w: string, mode: PorterMode): string {
  if (mode === 'nltk' && w.endsWith('ied')) return w.slice(0, -3) + (w.length === 4 ? 'ie' : 'i');
  if (w.endsWith('eed')) return positive(w.slice(0, -3)) ? w.slice(0, -1) : w;
  let stem: string | null = null;
  if (w.endsWith('ed') && hasVowel(w.slice(0, -2))) stem = w.slice(0, -2);
  else if (w.endsWith('ing') && hasVowel(w.slice(0, -3))) stem = w.slice(0, -3);
  if (stem === null) return w;
  if (stem.endsWith('at') || stem.endsWith('bl') || stem.endsWith('iz')) return stem + 'e';
  if (endsDoubleConsonant(stem)) return /[lsz]$/.test(stem) ? stem : stem.slice(0, -1);
  if (measure(stem) === 1 && endsCvc(stem, mode)) return stem + 'e';
  return stem;
}

function step1c(w: string, mode: PorterMode): string {
  if (!w.endsWith('y')) return w;
  const stem = w.slice(0, -1);
  const ok = mode === 'nltk' ? stem.length > 1 && isConsonant(stem, stem.length - 1) : hasVowel(stem);
  return ok ? stem + 'i' : w;
}

function step2(w: string, mode: PorterMode): string {
  if (mode === 'nltk' && w.endsWith('alli') && positive(w.slice(0, -4))) return step2(w.slice(0, -2), mode);
  const rules: Rule[] = [
    ['ational', 'ate', positive],
    ['tional', 'tion', positive],
    ['enci', 'ence', positive],
    ['anci', 'ance', positive],
    ['izer', 'ize', positive],
    mode === 'original' ? ['abli', 'able', positive] : ['bli', 'ble', positive],
    ['alli', 'al', positive],
    ['entli', 'ent', positive],
    ['eli', 'e', positive],
    ['ousli', 'ous', positive],
    ['ization', 'ize', positive],
    ['ation', 'ate', positive],
    ['ator', 'ate', positive],
    ['alism', 'al', positive],
    ['iveness', 'ive', positive],
    ['fulness', 'ful', positive],
    ['ousness', 'ous', positive],
    ['aliti', 'al', positive],
    ['iviti', 'ive', positive],
    ['biliti', 'ble', positive],
  ];
  if (mode === 'nltk') {
    rules.push(['fulli', 'ful', positive]);
    // The "l" of "logi" stays with the stem, so geology -> geolog like archaeology -> archaeolog.
    rules.push(['logi', 'log', () => positive(w.slice(0, -3))]);
  }
  return applyFirst(w, rules);
}

function step3(w: string): string {
  return applyFirst(w, [
    ['icate', 'ic', positive],
    ['ative', '', positive],
    ['alize', 'al', positive],
    ['iciti', 'ic', positive],
    ['ical', 'ic', positive],
    ['ful', '', positive],
    ['ness', '', positive],
  ]);
}

const STEP4 = ['al', 'ance', 'ence', 'er', 'ic', 'able', 'ible', 'ant', 'ement', 'ment', 'ent', 'ion', 'ou', 'ism', 'ate', 'iti', 'ous', 'ive', 'ize'];

function step4(w: string): string {
  const gt1 = (stem: string) => measure(stem) > 1;
  return applyFirst(
    w,
    STEP4.map((s): Rule => [s, '', s === 'ion' ? (stem) => gt1(stem) && /[st]$/.test(stem) : gt1]),
  );
}

function step5(w: string, mode: PorterMode): string {
  if (w.endsWith('e')) {
    const stem = w.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !endsCvc(stem, mode))) w = stem;
  }
  if (w.endsWith('ll') && measure(w.slice(0, -1)) > 1) w = w.slice(0, -1);
  return w;
}

/** Porter-stems one lowercase word. */
/**
 * Stems a word as Python does, counting code points: the rules measure lengths and compare
 * neighbouring characters, and a JavaScript string counts an emoji as two. A word holding
 * characters outside the BMP is stemmed with each one swapped for a private-use character the word
 * does not contain (one unit, a consonant like the original), then swapped back.
 */
export function porterStem(word: string, mode: PorterMode = 'nltk'): string {
  if (!/[\uD800-\uDBFF][\uDC00-\uDFFF]/.test(word)) return stemUnits(word, mode);
  const toStandIn = new Map<string, string>();
  const fromStandIn = new Map<string, string>();
  let next = 0xe000;
  for (const ch of word) {
    if (ch.length === 1 || toStandIn.has(ch)) continue;
    while (next <= 0xf8ff && word.includes(String.fromCharCode(next))) next++;
    if (next > 0xf8ff) return stemUnits(word, mode); // thousands of distinct emoji in one word
    const standIn = String.fromCharCode(next++);
    toStandIn.set(ch, standIn);
    fromStandIn.set(standIn, ch);
  }
  const stem = stemUnits([...word].map((ch) => toStandIn.get(ch) ?? ch).join(''), mode);
  return [...stem].map((ch) => fromStandIn.get(ch) ?? ch).join('');
}

function stemUnits(word: string, mode: PorterMode): string {
  if (mode === 'nltk') {
    const irregular = Object.hasOwn(IRREGULAR, word) ? IRREGULAR[word] : undefined;
    if (irregular !== undefined) return irregular;
    if (word.length <= 2) return word;
  }
  let w = step1a(word, mode);
  w = step1b(w, mode);
  w = step1c(w, mode);
  w = step2(w, mode);
  w = step3(w);
  w = step4(w);
  return step5(w, mode);
}
