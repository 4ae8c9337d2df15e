// Near-miss answers made from a reference answer, for `check-grader`'s continuity check: a grader
// that gives partial credit should score these differently from each other (and from the
// reference); one that only says 0 or 1 gives the trainer no gradient to follow.
export interface Perturbation {
  kind: 'digits' | 'words' | 'units';
  what: string;
  text: string;
}

const NUMBER = /\d+(?:\.\d+)?/g;

function scaleNumbers(text: string, factor: number): string {
  return text.replace(NUMBER, (n) => String(Number((Number(n) * factor).toPrecision(6))));
}

function bumpLastDigit(text: string): string {
  return text.replace(NUMBER, (n) => n.slice(0, -1) + String((Number(n.slice(-1)) + 1) % 10));
}

const UNIT_SWAPS: Array<[RegExp, string, string]> = [
  [/\bmillion\b/gi, 'billion', 'million -> billion'],
  [/\bbillion\b/gi, 'million', 'billion -> million'],
  [/\bthousand\b/gi, 'million', 'thousand -> million'],
  [/(\d)([kK])\b/g, '$1M', 'k -> M'],
  [/(\d)M\b/g, '$1B', 'M -> B'],
  [/(\d)B\b/g, '$1M', 'B -> M'],
  [/%/g, '', 'percent sign dropped'],
  [/\$/g, '€', '$ -> €'],
];

export function perturbations(reference: string): Perturbation[] {
  const words = reference.split(/\s+/).filter(Boolean);
  const out: Perturbation[] = [
    { kind: 'digits', what: 'numbers x1.001', text: scaleNumbers(reference, 1.001) },
    { kind: 'digits', what: 'numbers x1.05', text: scaleNumbers(reference, 1.05) },
    { kind: 'digits', what: 'numbers x1.5', text: scaleNumbers(reference, 1.5) },
    { kind: 'digits', what: 'numbers x10', text: scaleNumbers(reference, 10) },
    { kind: 'digits', what: 'last digit changed', text: bumpLastDigit(reference) },
    { kind: 'words', what: 'last word dropped', text: words.slice(0, -1).join(' ') },
    { kind: 'words', what: 'first half only', text: words.slice(0, Math.ceil(words.length / 2)).join(' ') },
    { kind: 'words', what: 'every other word replaced', text: words.map((w, i) => (i % 2 ? 'lorem' : w)).join(' ') },
    { kind: 'words', what: 'words reversed', text: [...words].reverse().join(' ') },
    { kind: 'words', what: 'filler appended', text: `${reference} (approximately, as far as I can tell)` },
    ...UNIT_SWAPS.map(([re, rep, what]): Perturbation => ({ kind: 'units', what, text: reference.replace(re, rep) })),
  ];
  const seen = new Set([reference, '']);
  return out.filter((p) => {
    if (seen.has(p.text)) return false;
    seen.add(p.text);
    return true;
  });
}
