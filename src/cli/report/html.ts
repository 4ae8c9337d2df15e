// The report as one self-contained HTML page: inline CSS and SVG, no script, no network.
import type { ReportStats } from './stats.js';
import { bars, chart, colors, dots, esc, legend, polyline, ticksAt, type Frame, type Point } from './svg.js';
import { fmt } from './table.js';

const W = 1100;

function scoreDomain(s: ReportStats): [number, number] {
  const all = s.rows.flatMap((r) => r.scores);
  return [Math.min(0, ...all), Math.max(1, ...all)];
}

function perRowChart(s: ReportStats): string {
  const [lo, hi] = scoreDomain(s);
  const rows = s.rows.map((r) => r.row);
  const f: Frame = { width: W, height: 320, xMin: Math.min(...rows) - 0.5, xMax: Math.max(...rows) + 0.5, yMin: lo, yMax: hi, xLabel: 'dataset row', yLabel: 'score' };
  // Tries of a row spread sideways a little so equal scores stay visible as several dots.
  const tries: Point[] = s.rows.flatMap((r) =>
    r.scores.map((y, i) => ({ x: r.row + (r.scores.length > 1 ? (i / (r.scores.length - 1) - 0.5) * 0.4 : 0), y, label: `row ${r.row}: ${fmt(y)}` })),
  );
  const means: Point[] = s.rows.filter((r) => r.mean !== null).map((r) => ({ x: r.row, y: r.mean! }));
  const xTicks = rows.length <= 30 ? rows : undefined;
  return chart(f, dots(f, tries) + ticksAt(f, means, colors.accent) + legend(f, [{ label: 'one try', color: colors.primary }, { label: 'row mean', color: colors.accent }]), {
    ...(xTicks ? { xTicks } : {}),
    title: 'score per row across tries',
  });
}

function scoreHistogram(s: ReportStats): string {
  const [lo, hi] = scoreDomain(s);
  const bins = 10;
  const width = (hi - lo) / bins;
  const counts = new Array<number>(bins).fill(0);
  for (const x of s.rows.flatMap((r) => r.scores)) counts[Math.min(bins - 1, Math.floor((x - lo) / width))]!++;
  const f: Frame = { width: 540, height: 280, xMin: lo, xMax: hi, yMin: 0, yMax: Math.max(1, ...counts) * 1.15, xLabel: 'score', yLabel: 'rollouts' };
  return chart(f, bars(f, counts.map((c, i) => ({ x: lo + (i + 0.5) * width, y: c })), width), { title: 'histogram of scores' });
}

function bestOfKChart(s: ReportStats): string {
  const pts = s.bestOfK.map((b) => ({ x: b.k, y: b.expectedBest }));
  const [lo, hi] = scoreDomain(s);
  const kMax = Math.max(2, ...pts.map((p) => p.x));
  const f: Frame = { width: 540, height: 280, xMin: 1, xMax: kMax, yMin: lo, yMax: hi, xLabel: 'k (tries)', yLabel: 'score' };
  const meanLine = s.meanScore === null ? '' : polyline(f, [{ x: 1, y: pts[0]?.y ?? s.meanScore }, { x: kMax, y: pts[0]?.y ?? s.meanScore }], colors.accent, true);
  const xTicks = Array.from({ length: kMax }, (_, i) => i + 1).filter((k) => kMax <= 12 || k % Math.ceil(kMax / 10) === 0 || k === 1);
  return chart(f, meanLine + polyline(f, pts, colors.good) + legend(f, [{ label: 'expected best of k', color: colors.good }, { label: 'mean (k = 1)', color: colors.accent }]), {
    xTicks,
    title: 'mean versus best-of-k',
  });
}

function toolCallChart(s: ReportStats): string {
  const pts = [...s.toolCallHistogram.entries()].map(([x, y]) => ({ x, y }));
  const xs = pts.map((p) => p.x);
  const f: Frame = { width: 540, height: 280, xMin: Math.min(0, ...xs) - 0.5, xMax: Math.max(1, ...xs) + 0.5, yMin: 0, yMax: Math.max(1, ...pts.map((p) => p.y)) * 1.15, xLabel: 'tool calls per rollout', yLabel: 'rollouts' };
  const span = Math.max(1, ...xs);
  const xTicks = Array.from({ length: span + 1 }, (_, i) => i).filter((k) => span <= 15 || k % Math.ceil(span / 10) === 0);
  return chart(f, bars(f, pts, 1, '#0891b2'), { xTicks, title: 'tool calls per rollout' });
}

function pct(x: number | null): string {
  return x === null ? '-' : `${(x * 100).toFixed(1)}%`;
}

export function summaryPairs(s: ReportStats): [string, string][] {
  const bestK = s.bestOfK.at(-1);
  return [
    ['rollouts', `${s.rollouts} (${s.graded} graded, ${s.discarded} discarded)`],
    ['rows', String(s.rows.length)],
    ['mean score (per rollout)', fmt(s.meanScore)],
    [`best of k (k = ${bestK?.k ?? '-'})`, fmt(bestK?.expectedBest ?? null)],
    ['rows with no learning signal', `${s.noSignalRows} of ${s.comparableRows} (${pct(s.comparableRows ? s.noSignalRows / s.comparableRows : null)})`],
    ['tool calls per rollout', `mean ${fmt(s.toolCalls.mean, 2)}, p50 ${fmt(s.toolCalls.p50)}, p95 ${fmt(s.toolCalls.p95)}, max ${fmt(s.toolCalls.max)}`],
    ['latency (ms)', `mean ${fmt(s.latencyMs.mean, 0)}, p50 ${fmt(s.latencyMs.p50)}, p95 ${fmt(s.latencyMs.p95)}, max ${fmt(s.latencyMs.max)}`],
    ['budget exhausted', pct(s.budgetExhaustedRate)],
    ['step cap reached', pct(s.maxStepsRate)],
  ];
}

export function renderHtml(s: ReportStats, source: string): string {
  const summary = summaryPairs(s).map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('');
  const rows = s.rows
    .map((r) => {
      const flat = r.scores.length >= 2 && (r.spread ?? 0) < 1e-9;
      return `<tr${flat ? ' class="flat"' : ''}><td>${r.row}</td><td>${r.tries}</td><td>${fmt(r.mean)}</td><td>${fmt(r.best)}</td><td>${fmt(r.spread)}</td><td>${esc(r.scores.map((x) => fmt(x, 2)).join(' '))}</td><td>${flat ? 'no signal' : ''}</td></tr>`;
    })
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Rollout report: ${esc(source)}</title>
<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#111827;max-width:1120px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:24px 0 8px}
.src{color:#6b7280;font-size:12px;margin-bottom:16px}
table{border-collapse:collapse;font-size:13px}th,td{padding:3px 10px;border-bottom:1px solid #e5e7eb;text-align:left}
.grid{display:flex;flex-wrap:wrap;gap:8px}tr.flat td{color:#9ca3af}
</style></head><body>
<h1>Rollout report</h1><div class="src">${esc(source)}</div>
<table>${summary}</table>
<h2>Score per row across tries</h2>${perRowChart(s)}
<div class="grid"><div><h2>Histogram of scores</h2>${scoreHistogram(s)}</div><div><h2>Mean versus best-of-k</h2>${bestOfKChart(s)}</div></div>
<h2>Tool calls per rollout</h2>${toolCallChart(s)}
<h2>Rows</h2>
<table><tr><th>row</th><th>tries</th><th>mean</th><th>best</th><th>spread</th><th>scores</th><th></th></tr>${rows}</table>
</body></html>
`;
}
