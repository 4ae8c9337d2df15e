// Numeric answers: the value the model committed to, compared with the reference within a
// relative tolerance, decaying linearly to 0 at ten times the tolerance (so a preliminary figure
// 1-2% off the final one earns little or nothing, while rounding "$944.6 million" to "$945
// million" keeps full credit).
//
// Against gaming:
// - Several distinct candidate numbers share the credit: the best one's closeness divided by how
//   many there are. Listing n guesses is then worth exactly what a 1-in-n guess is worth, so
//   shotgunning never beats committing to the figure the model believes.
// - Numbers that also appear in the question, years and days of a date are not candidates: the
//   model gains nothing by restating the question, and "in Q2 2025 revenue was ..." is not a guess.
// - Numbers of the wrong kind (a percent when a dollar amount is asked, or the reverse, or another
//   currency) are not candidates either: they cannot be right, and usually are context ("up 11%").
import { extractNumbers, numericCloseness, parseNumber, type FoundNumber } from 'rft-endpoints/grading';

export interface NumberScore {
  score: number;
  /** The candidate value that scored best (after scale and sign normalisation). */
  best: number | null;
  candidates: number;
  why: string;
}

export interface ReferenceNumber {
  value: number;
  percent: boolean;
  /** The currency the reference is in ("USD" for "$4.2 million"), if any. */
  currency?: string;
  /** The scale word the reference was written with ("4.2 million" -> 1e6), used for bare answers. */
  scale: number;
}

const SCALE_WORD = /(?:thousand|million|billion|trillion|bn|mn|mm|tn)\b|\d[kmbt]\b/i;
const MONTH = '(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const DAY_BEFORE_MONTH = new RegExp(`^\\s*(?:st|nd|rd|th)?\\s+${MONTH}\\b`, 'i');
const MONTH_BEFORE_DAY = new RegExp(`\\b${MONTH}\\s+$`, 'i');

export function parseReference(reference: string): ReferenceNumber | null {
  const parsed = parseNumber(reference) ?? extractNumbers(reference)[0] ?? null;
  if (!parsed) return null;
  const literal = /\d[\d,]*(?:\.\d+)?/.exec(reference)?.[0];
  const lit = literal ? Number(literal.replace(/,/g, '')) : 0;
  const scale = lit !== 0 ? Math.abs(parsed.value / lit) : 1;
  const percent = parsed.unit === '%';
  return {
    value: parsed.value,
    percent,
    ...(parsed.unit !== undefined && !percent ? { currency: parsed.unit } : {}),
    scale: Number.isFinite(scale) && scale > 0 ? scale : 1,
  };
}

function isYear(n: FoundNumber): boolean {
  return n.unit === undefined && /^\d{4}$/.test(n.raw) && n.value >= 1900 && n.value <= 2100;
}

function isDay(n: FoundNumber, text: string): boolean {
  if (n.unit !== undefined || !/^\d{1,2}$/.test(n.raw) || n.value < 1 || n.value > 31) return false;
  const after = text.slice(n.index + n.raw.length, n.index + n.raw.length + 14);
  const before = text.slice(Math.max(0, n.index - 12), n.index);
  return DAY_BEFORE_MONTH.test(after) || MONTH_BEFORE_DAY.test(before);
}

const sameValue = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

const SCALE_AFTER: Record<string, number> = { thousand: 1e3, million: 1e6, mn: 1e6, billion: 1e9, bn: 1e9 };
const AFTER_PARENS = /^\s*(thousand|million|mn|billion|bn)\b/i;

/** The readings of one written number that a careful reader could mean. */
function readings(n: FoundNumber, text: string, ref: ReferenceNumber, saysLoss: boolean): number[] {
  let v = n.value;
  let bare = !SCALE_WORD.test(n.raw);
  // Accounting style puts the scale outside the parentheses: "$(1,940) thousand".
  const after = n.raw.endsWith(')') ? AFTER_PARENS.exec(text.slice(n.index + n.raw.length)) : null;
  if (bare && after?.[1]) {
    v *= SCALE_AFTER[after[1].toLowerCase()] ?? 1;
    bare = false;
  }
  if (ref.value < 0 && v > 0 && saysLoss) v = -v; // "an operating loss of $1.94 million"
  const out = [v];
  // In prose, parentheses are usually an aside ("$51.7 million (51,700 thousand)"), not a negative.
  if (ref.value > 0 && v < 0 && n.raw.startsWith('(') && n.raw.endsWith(')')) out.push(-v);
  if (bare && ref.scale !== 1) out.push(v * ref.scale); // "51.7" when the report says "$51.7 million"
  if (ref.percent && n.unit !== '%' && Math.abs(v) <= 1.5) out.push(v * 100); // 0.062 for 6.2%
  return out;
}

export function scoreNumber(answer: string, reference: string, opts: { tolerance: number; question: string }): NumberScore {
  const ref = parseReference(reference);
  if (!ref) return { score: 0, best: null, candidates: 0, why: `reference "${reference}" is not a number` };
  const inQuestion = extractNumbers(opts.question).map((n) => n.value);
  const refIsYear = !ref.percent && ref.scale === 1 && Number.isInteger(ref.value) && ref.value >= 1900 && ref.value <= 2100;
  const saysLoss = /\blosse?s?\b|\bnegative\b|\bdeficit\b/i.test(answer);
  const found = extractNumbers(answer).filter((n) => {
    if (ref.percent ? n.unit !== undefined && n.unit !== '%' : n.unit === '%') return false;
    if (ref.currency !== undefined && n.unit !== undefined && n.unit !== ref.currency) return false;
    if (isYear(n) && !refIsYear) return false;
    if (isDay(n, answer)) return false;
    return !inQuestion.some((q) => sameValue(q, n.value));
  });
  if (found.length === 0) return { score: 0, best: null, candidates: 0, why: 'no candidate number in the answer' };
  const closeness = (x: number): number =>
    numericCloseness(x, ref.value, { relTol: opts.tolerance, zeroAt: 10 * opts.tolerance });
  // Each candidate at its most favourable reading; equal values ("$4.2M (4,200 thousand)") count once.
  const distinct: Array<{ value: number; score: number }> = [];
  for (const n of found) {
    let bestValue = n.value;
    let bestScore = -1;
    for (const v of readings(n, answer, ref, saysLoss)) {
      const s = closeness(v);
      if (s > bestScore) [bestValue, bestScore] = [v, s];
    }
    if (!distinct.some((d) => sameValue(d.value, bestValue))) distinct.push({ value: bestValue, score: bestScore });
  }
  const top = distinct.reduce((a, b) => (b.score > a.score ? b : a));
  const score = top.score / distinct.length;
  const why =
    `closest candidate ${top.value} vs reference ${ref.value}: ${top.score.toFixed(3)}` +
    (distinct.length > 1 ? `, shared by ${distinct.length} distinct numbers` : '');
  return { score, best: top.value, candidates: distinct.length, why };
}
