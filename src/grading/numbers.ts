// Numbers as models write them in answers: "$4.2M", "4,200,000", "12.5%", "(1.2)", "1.2 billion",
// "-3k". Finance-style graders compare values, not strings, so the scale words are folded into the
// value and the unit (currency or percent) is kept apart.
//
// Choices, documented in docs/grading.md:
// - A percent keeps its written value: "12.5%" is { value: 12.5, unit: '%' } (not 0.125), because
//   references are usually written the same way ("12.5").
// - Commas are thousands separators only in groups of three ("4,200,000"); "1,5" is two numbers.
//   European decimal commas are not supported.
// - A one-letter scale (k, m, b, t) counts only when glued to the number ("4.2M", "-3k"), so
//   "5 m" (metres) stays 5; words and short forms ("1.2 billion", "3 bn", "2 mn") may follow a space.
// - Accounting parentheses "(1.2)" mean a negative value.

export interface ParsedNumber {
  value: number;
  unit?: string;
}

export interface FoundNumber extends ParsedNumber {
  /** The matched text. */
  raw: string;
  /** Offset of `raw` in the searched text. */
  index: number;
}

const SCALE: Record<string, number> = {
  k: 1e3,
  thousand: 1e3,
  m: 1e6,
  mn: 1e6,
  mm: 1e6,
  million: 1e6,
  b: 1e9,
  bn: 1e9,
  billion: 1e9,
  t: 1e12,
  tn: 1e12,
  trillion: 1e12,
};

const CURRENCY_SYMBOL: Record<string, string> = { $: 'USD', '€': 'EUR', '£': 'GBP', '¥': 'JPY', '₹': 'INR' };
const CURRENCY_CODES = 'USD|EUR|GBP|JPY|CNY|INR|CHF|CAD|AUD';
const CURRENCY_WORD: Record<string, string> = { dollar: 'USD', dollars: 'USD', euro: 'EUR', euros: 'EUR' };

const BODY =
  '(?<sign1>[-+\u2212])?' +
  `(?:(?<sym>[$€£¥₹])|(?<pre>${CURRENCY_CODES})\\s?)?` +
  '(?<sign2>[-+\u2212])?' +
  '(?<num>\\d{1,3}(?:,\\d{3})+(?:\\.\\d+)?|\\d+(?:\\.\\d+)?|\\.\\d+)' +
  '(?<exp>[eE][-+]?\\d+(?![\\w]))?' +
  '(?:\\s*(?<word>thousand|million|billion|trillion|bn|mn|mm|tn)\\b|(?<letter>[kKmMbBtT])(?![A-Za-z0-9_]))?' +
  '(?<pct>\\s*(?:%|percent\\b|per cent\\b))?' +
  `(?:\\s*(?<suf>${CURRENCY_CODES}|dollars?|euros?)\\b)?`;

// Not preceded by a letter, digit or dot, so "Q3", "FY2023" and "v1.2" are not read as numbers.
const FIND = new RegExp(`(?<![A-Za-z0-9_.])(?<open>\\(\\s*)?${BODY}(?<close>\\s*\\))?`, 'g');
const WHOLE = new RegExp(`^(?<open>\\(\\s*)?${BODY}(?<close>\\s*\\))?[.,;:!]?$`);

function fromGroups(g: Record<string, string | undefined>): ParsedNumber | null {
  const num = g.num;
  if (num === undefined) return null;
  let value = Number(num.replace(/,/g, '') + (g.exp ?? ''));
  if (!Number.isFinite(value)) return null;
  const scaleKey = (g.word ?? g.letter ?? '').toLowerCase();
  if (scaleKey) value *= SCALE[scaleKey] ?? 1;
  const negative = [g.sign1, g.sign2].some((s) => s === '-' || s === '\u2212');
  const parens = g.open !== undefined && g.close !== undefined;
  if (negative !== parens) value = -Math.abs(value);
  let unit: string | undefined;
  if (g.pct) unit = '%';
  else if (g.sym) unit = CURRENCY_SYMBOL[g.sym];
  else if (g.pre) unit = g.pre;
  else if (g.suf) unit = CURRENCY_WORD[g.suf.toLowerCase()] ?? g.suf.toUpperCase();
  // -0 compares equal to 0 but prints as "-0"; keep results boring.
  if (value === 0) value = 0;
  return unit !== undefined ? { value, unit } : { value };
}

/** The number that `text` is, as a whole (surrounding spaces and a final period allowed), or null. */
export function parseNumber(text: string): ParsedNumber | null {
  const m = WHOLE.exec(text.trim());
  if (!m?.groups) return null;
  // A lone "(" or ")" is not accounting notation; the whole-text form must balance.
  if ((m.groups.open === undefined) !== (m.groups.close === undefined)) return null;
  return fromGroups(m.groups);
}

/** Every number in free text, in order of appearance. */
export function extractNumbers(text: string): FoundNumber[] {
  const found: FoundNumber[] = [];
  for (const m of text.matchAll(FIND)) {
    if (!m.groups) continue;
    const groups: Record<string, string | undefined> = { ...m.groups };
    let raw = m[0];
    let index = m.index;
    // An unbalanced parenthesis belongs to the prose around the number ("(see 3"), not to it.
    if ((groups.open === undefined) !== (groups.close === undefined)) {
      if (groups.open !== undefined) {
        raw = raw.slice(groups.open.length);
        index += groups.open.length;
      } else if (groups.close !== undefined) {
        raw = raw.slice(0, raw.length - groups.close.length);
      }
      groups.open = undefined;
      groups.close = undefined;
    }
    const parsed = fromGroups(groups);
    if (parsed) found.push({ ...parsed, raw: raw.trim(), index });
  }
  return found;
}
