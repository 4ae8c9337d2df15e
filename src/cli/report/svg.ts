// Hand-made inline SVG charts, so the report is one file that draws offline with no library.
export interface Frame {
  width: number;
  height: number;
  xMin: number;
  xMax: number;
  yMin: number;
  yMax: number;
  xLabel: string;
  yLabel: string;
}

const PAD = { left: 56, right: 16, top: 30, bottom: 44 };
const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c'];

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function n(v: number): string {
  return Number(v.toFixed(2)).toString();
}

export function scaleX(f: Frame, x: number): number {
  const span = f.xMax - f.xMin || 1;
  return PAD.left + ((x - f.xMin) / span) * (f.width - PAD.left - PAD.right);
}

export function scaleY(f: Frame, y: number): number {
  const span = f.yMax - f.yMin || 1;
  return f.height - PAD.bottom - ((y - f.yMin) / span) * (f.height - PAD.top - PAD.bottom);
}

/** Round tick values covering [lo, hi]. */
export function ticks(lo: number, hi: number, count = 5): number[] {
  const span = hi - lo || 1;
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => span / s <= count) ?? raw;
  const out: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Number(t.toFixed(10)));
  return out;
}

/** The frame's axes, grid and labels; `body` is drawn inside. */
export function chart(f: Frame, body: string, opts: { xTicks?: number[]; title?: string } = {}): string {
  const xt = opts.xTicks ?? ticks(f.xMin, f.xMax);
  const yt = ticks(f.yMin, f.yMax);
  const x0 = PAD.left;
  const y0 = f.height - PAD.bottom;
  const grid = yt
    .map((t) => `<line x1="${x0}" x2="${f.width - PAD.right}" y1="${n(scaleY(f, t))}" y2="${n(scaleY(f, t))}" stroke="#e5e7eb"/>` +
      `<text x="${x0 - 6}" y="${n(scaleY(f, t) + 4)}" text-anchor="end">${esc(String(t))}</text>`)
    .join('');
  const xlabels = xt
    .map((t) => `<text x="${n(scaleX(f, t))}" y="${y0 + 16}" text-anchor="middle">${esc(String(t))}</text>`)
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${f.width}" height="${f.height}" viewBox="0 0 ${f.width} ${f.height}" font-family="sans-serif" font-size="11" fill="#374151" role="img"${opts.title ? ` aria-label="${esc(opts.title)}"` : ''}>` +
    grid +
    `<line x1="${x0}" x2="${x0}" y1="${PAD.top}" y2="${y0}" stroke="#9ca3af"/>` +
    `<line x1="${x0}" x2="${f.width - PAD.right}" y1="${y0}" y2="${y0}" stroke="#9ca3af"/>` +
    xlabels +
    `<text x="${(x0 + f.width - PAD.right) / 2}" y="${f.height - 8}" text-anchor="middle">${esc(f.xLabel)}</text>` +
    `<text transform="translate(14 ${(PAD.top + y0) / 2}) rotate(-90)" text-anchor="middle">${esc(f.yLabel)}</text>` +
    body +
    `</svg>`
  );
}

export interface Point {
  x: number;
  y: number;
  /** Shown on hover. */
  label?: string;
}

export function dots(f: Frame, pts: Point[], color = PALETTE[0]!, r = 3.5): string {
  return pts
    .map((p) => {
      const title = p.label ? `<title>${esc(p.label)}</title>` : '';
      return `<circle cx="${n(scaleX(f, p.x))}" cy="${n(scaleY(f, p.y))}" r="${r}" fill="${color}" fill-opacity="0.55">${title}</circle>`;
    })
    .join('');
}

export function polyline(f: Frame, pts: Point[], color = PALETTE[0]!, dashed = false): string {
  const d = pts.map((p) => `${n(scaleX(f, p.x))},${n(scaleY(f, p.y))}`).join(' ');
  return `<polyline points="${d}" fill="none" stroke="${color}" stroke-width="2"${dashed ? ' stroke-dasharray="6 4"' : ''}/>` + dots(f, pts, color, 3);
}

/** Short horizontal marks (e.g. a row's mean) centred on each point. */
export function ticksAt(f: Frame, pts: Point[], color: string, halfWidth = 8): string {
  return pts
    .map((p) => {
      const x = scaleX(f, p.x);
      const y = n(scaleY(f, p.y));
      return `<line x1="${n(x - halfWidth)}" x2="${n(x + halfWidth)}" y1="${y}" y2="${y}" stroke="${color}" stroke-width="2.5"/>`;
    })
    .join('');
}

/** Bars from (x, height) pairs, each `barWidth` wide in data units. */
export function bars(f: Frame, pts: Point[], barWidth: number, color = PALETTE[0]!): string {
  return pts
    .map((p) => {
      const x1 = scaleX(f, p.x - barWidth / 2);
      const x2 = scaleX(f, p.x + barWidth / 2);
      const y = scaleY(f, p.y);
      return `<rect x="${n(x1 + 1)}" y="${n(y)}" width="${n(Math.max(1, x2 - x1 - 2))}" height="${n(scaleY(f, f.yMin) - y)}" fill="${color}"/>` +
        (p.y > 0 ? `<text x="${n((x1 + x2) / 2)}" y="${n(y - 3)}" text-anchor="middle">${p.y}</text>` : '');
    })
    .join('');
}

export function legend(f: Frame, entries: { label: string; color: string }[]): string {
  return entries
    .map((e, i) => {
      const x = PAD.left + 10 + i * 150;
      // Above the plot area, so it never hides a data point.
      return `<rect x="${x}" y="4" width="12" height="12" fill="${e.color}"/><text x="${x + 18}" y="14">${esc(e.label)}</text>`;
    })
    .join('');
}

export const colors = { primary: PALETTE[0]!, accent: PALETTE[1]!, good: PALETTE[2]! };
