// The Porter stemmer, as published: M.F. Porter, "An algorithm for suffix stripping", Program 14(3),
// 1980 (NLTK's PorterStemmer(mode=ORIGINAL_ALGORITHM)). NLTK's default mode adds its own
// extensions (e.g. "dying" -> "die", a word list of irregular forms), which this does not, so a
// handful of words stem differently from NLTK's default; docs/grading.md says so.
//
// Words of one or two letters are returned unchanged, as in Porter's reference implementation.

const isVowelAt = (w: string, i: number): boolean => {
  const c = w[i];
  if (c === 'a' || c === 'e' || c === 'i' || c === 'o' || c === 'u') return true;
  // y is a vowel when it follows a consonant.
  return c === 'y' && i > 0 && !isVowelAt(w, i - 1);
};

/** m in [C](VC){m}[V]: the number of vowel-consonant sequences. */
function measure(stem: string): number {
  let m = 0;
  let i = 0;
  const n = stem.length;
  while (i < n && !isVowelAt(stem, i)) i++;
  while (i < n) {
    while (i < n && isVowelAt(stem, i)) i++;
    if (i >= n) break;
    while (i < n && !isVowelAt(stem, i)) i++;
    m++;
  }
  return m;
}

const hasVowel = (stem: string): boolean => [...stem].some((_, i) => isVowelAt(stem, i));

const endsDoubleConsonant = (w: string): boolean =>
  w.length >= 2 && w[w.length - 1] === w[w.length - 2] && !isVowelAt(w, w.length - 1);

/** *o: the stem ends consonant-vowel-consonant, the last not w, x or y. */
function endsCvc(w: string): boolean {
  const n = w.length;
  if (n < 3) return false;
  const last = w[n - 1] as string;
  return !isVowelAt(w, n - 3) && isVowelAt(w, n - 2) && !isVowelAt(w, n - 1) && !'wxy'.includes(last);
}

type Rule = [suffix: string, replacement: string];

/** The first rule whose suffix matches decides: it applies if the stem passes `ok`, else nothing does. */
function applyFirst(w: string, rules: Rule[], ok: (stem: string) => boolean): string {
  for (const [suffix, rep] of rules) {
    if (w.endsWith(suffix)) {
      const stem = w.slice(0, w.length - suffix.length);
      return ok(stem) ? stem + rep : w;
    }
  }
  return w;
}

const STEP2: Rule[] = [
  ['ational', 'ate'],
  ['tional', 'tion'],
  ['enci', 'ence'],
  ['anci', 'ance'],
  ['izer', 'ize'],
  ['abli', 'able'],
  ['alli', 'al'],
  ['entli', 'ent'],
  ['eli', 'e'],
  ['ousli', 'ous'],
  ['ization', 'ize'],
  ['ation', 'ate'],
  ['ator', 'ate'],
  ['alism', 'al'],
  ['iveness', 'ive'],
  ['fulness', 'ful'],
  ['ousness', 'ous'],
  ['aliti', 'al'],
  ['iviti', 'ive'],
  ['biliti', 'ble'],
];

const STEP3: Rule[] = [
  ['icate', 'ic'],
  ['ative', ''],
  ['alize', 'al'],
  ['iciti', 'ic'],
  ['ical', 'ic'],
  ['ful', ''],
  ['ness', ''],
];

const STEP4 = [
  'al', 'ance', 'ence', 'er', 'ic', 'able', 'ible', 'ant', 'ement', 'ment', 'ent', 'ion', 'ou',
  'ism', 'ate', 'iti', 'ous', 'ive', 'ize',
];

function step1ab(w: string): string {
  // 1a
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies')) w = w.slice(0, -2);
  else if (w.endsWith('ss')) {
    /* unchanged */
  } else if (w.endsWith('s')) w = w.slice(0, -1);
  // 1b
  if (w.endsWith('eed')) {
    return measure(w.slice(0, -3)) > 0 ? w.slice(0, -1) : w;
  }
  let stem: string | null = null;
  if (w.endsWith('ed') && hasVowel(w.slice(0, -2))) stem = w.slice(0, -2);
  else if (w.endsWith('ing') && hasVowel(w.slice(0, -3))) stem = w.slice(0, -3);
  if (stem === null) return w;
  if (stem.endsWith('at') || stem.endsWith('bl') || stem.endsWith('iz')) return stem + 'e';
  if (endsDoubleConsonant(stem) && !/[lsz]$/.test(stem)) return stem.slice(0, -1);
  if (measure(stem) === 1 && endsCvc(stem)) return stem + 'e';
  return stem;
}

function step1c(w: string): string {
  return w.endsWith('y') && hasVowel(w.slice(0, -1)) ? w.slice(0, -1) + 'i' : w;
}

function step4(w: string): string {
  // Longest suffix first, so "ement" wins over "ment" and "ent".
  const suffix = [...STEP4].sort((a, b) => b.length - a.length).find((s) => w.endsWith(s));
  if (!suffix) return w;
  const stem = w.slice(0, w.length - suffix.length);
  if (measure(stem) <= 1) return w;
  if (suffix === 'ion' && !/[st]$/.test(stem)) return w;
  return stem;
}

function step5(w: string): string {
  if (w.endsWith('e')) {
    const stem = w.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !endsCvc(stem))) w = stem;
  }
  if (measure(w) > 1 && endsDoubleConsonant(w) && w.endsWith('l')) w = w.slice(0, -1);
  return w;
}

/** Porter-stems one lowercase word. */
export function porterStem(word: string): string {
  if (word.length <= 2) return word;
  let w = step1ab(word);
  w = step1c(w);
  w = applyFirst(w, STEP2, (s) => measure(s) > 0);
  w = applyFirst(w, STEP3, (s) => measure(s) > 0);
  w = step4(w);
  return step5(w);
}
