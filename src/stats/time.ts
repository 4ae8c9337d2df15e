// Times in query strings: an instant is an ISO time, milliseconds since the epoch, or a duration
// back from now ("15m", "6h", "7d"); a duration is milliseconds or a number with s, m, h or d.
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(s: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(s.trim());
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2] ?? 'ms']!;
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : undefined;
}

export function parseInstant(s: string, now: number): number | undefined {
  if (/^\d+$/.test(s)) return Number(s);
  if (/^\d+(?:\.\d+)?(ms|s|m|h|d)$/.test(s)) {
    const back = parseDuration(s);
    return back === undefined ? undefined : now - back;
  }
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : undefined;
}
