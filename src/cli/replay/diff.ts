// Comparing a replayed output with the recorded one: normalizers blank out what legitimately
// changes between runs (times, ids), then a unified-style line diff shows what is left.

export interface Normalizer {
  pattern: RegExp;
  replacement: string;
}

// trace ids first: they contain a uuid, which would otherwise be replaced inside them.
export const DEFAULT_NORMALIZERS: readonly Normalizer[] = [
  { pattern: /trace_[A-Za-z0-9_-]+/g, replacement: '<trace>' },
  { pattern: /\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g, replacement: '<time>' },
  { pattern: /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, replacement: '<uuid>' },
];

export function userNormalizer(source: string): Normalizer {
  return { pattern: new RegExp(source, 'g'), replacement: '<norm>' };
}

export function normalize(text: string, normalizers: readonly Normalizer[]): string {
  return normalizers.reduce((t, n) => t.replace(n.pattern, n.replacement), text);
}

/**
 * JSON outputs are diffed pretty-printed, with multi-line strings (a document page, a file) spread
 * over real lines as `|` blocks, so a diff points at the changed line, not at one huge string.
 */
export function forDiff(text: string): string {
  const t = text.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return render(JSON.parse(t) as unknown, '');
    } catch {
      // not JSON after all
    }
  }
  return text;
}

function render(v: unknown, indent: string): string {
  const inner = indent + '  ';
  if (typeof v === 'string' && v.includes('\n')) return '|\n' + v.split('\n').map((l) => inner + l).join('\n');
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return '[\n' + v.map((x) => inner + render(x, inner)).join(',\n') + '\n' + indent + ']';
  }
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v);
    if (entries.length === 0) return '{}';
    return '{\n' + entries.map(([k, x]) => `${inner}${JSON.stringify(k)}: ${render(x, inner)}`).join(',\n') + '\n' + indent + '}';
  }
  return JSON.stringify(v) ?? 'null';
}

type Op = { kind: ' ' | '-' | '+'; line: string };

// Above this many cells the LCS table is too big; the differing middle is then shown whole.
const MAX_CELLS = 4_000_000;

function diffOps(a: string[], b: string[]): Op[] {
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const am = a.slice(pre, a.length - suf);
  const bm = b.slice(pre, b.length - suf);
  const head: Op[] = a.slice(0, pre).map((line) => ({ kind: ' ', line }));
  const tail: Op[] = a.slice(a.length - suf).map((line) => ({ kind: ' ', line }));
  if (am.length * bm.length > MAX_CELLS) {
    return [...head, ...am.map((line): Op => ({ kind: '-', line })), ...bm.map((line): Op => ({ kind: '+', line })), ...tail];
  }
  // lcs[i][j] = LCS length of am[i..] and bm[j..]
  const n = am.length;
  const m = bm.length;
  const lcs = new Array<Uint32Array>(n + 1);
  for (let i = 0; i <= n; i++) lcs[i] = new Uint32Array(m + 1);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i]![j] = am[i] === bm[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const mid: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && am[i] === bm[j]) {
      mid.push({ kind: ' ', line: am[i++]! });
      j++;
    } else if (i < n && (j === m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      mid.push({ kind: '-', line: am[i++]! }); // removals first, as diff -u prints them
    } else {
      mid.push({ kind: '+', line: bm[j++]! });
    }
  }
  return [...head, ...mid, ...tail];
}

/** A unified diff (3 lines of context) of `before` and `after`, or '' when they are equal. */
export function unifiedDiff(before: string, after: string, labels: [string, string], context = 3): string {
  const a = before.split('\n');
  const b = after.split('\n');
  const ops = diffOps(a, b);
  if (ops.every((o) => o.kind === ' ')) return '';
  const out = [`--- ${labels[0]}`, `+++ ${labels[1]}`];
  // Positions of changed ops, grouped into hunks whose context windows touch.
  const changed = ops.flatMap((o, k) => (o.kind === ' ' ? [] : [k]));
  let start = 0;
  while (start < changed.length) {
    let end = start;
    while (end + 1 < changed.length && changed[end + 1]! - changed[end]! <= 2 * context) end++;
    const from = Math.max(0, changed[start]! - context);
    const to = Math.min(ops.length, changed[end]! + context + 1);
    const before0 = ops.slice(0, from).filter((o) => o.kind !== '+').length;
    const after0 = ops.slice(0, from).filter((o) => o.kind !== '-').length;
    const hunk = ops.slice(from, to);
    const aLen = hunk.filter((o) => o.kind !== '+').length;
    const bLen = hunk.filter((o) => o.kind !== '-').length;
    out.push(`@@ -${before0 + 1},${aLen} +${after0 + 1},${bLen} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    start = end + 1;
  }
  return out.join('\n');
}
