// Plain terminal tables: columns padded to their widest cell, numbers right-aligned.
export type Cell = string | number | null;

export function fmt(v: Cell, digits = 3): string {
  if (v === null) return '-';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(digits);
  return v;
}

export function renderTable(headers: string[], rows: Cell[][]): string {
  const text = rows.map((r) => r.map((c) => fmt(c)));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] ?? '').length)));
  const numeric = headers.map((_, i) => rows.every((r) => r[i] === null || typeof r[i] === 'number'));
  const line = (cells: string[]) =>
    cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...text.map(line)].join('\n');
}
