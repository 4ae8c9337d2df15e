// Times in query strings: an instant is an ISO time, milliseconds since the epoch, or a duration
// back from now ("15m", "6h", "7d"); a duration is milliseconds or a number with s, m, h or d.
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(s: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(s.trim());
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2] ?? 'ms']!;
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : undefined;
}

/** The last instant a window may name: 9999-12-31T23:59:59.999Z. */
export const MAX_INSTANT_MS = 253_402_300_799_999;

/**
 * undefined for anything else, and for an instant before the epoch or after year 9999: Date.parse
 * alone reads "-1" as 2001 and "5" as a May, so only an ISO date (YYYY-MM-DD...) is handed to it.
 */
export function parseInstant(s: string, now: number): number | undefined {
  let t: number | undefined;
  if (/^\d+$/.test(s)) t = Number(s);
  else if (/^\d+(?:\.\d+)?(ms|s|m|h|d)$/.test(s)) {
    const back = parseDuration(s);
    t = back === undefined ? undefined : now - back;
  } else if (/^\d{4}-\d{2}-\d{2}(?:$|[T ])/.test(s)) t = Date.parse(s);
  return t !== undefined && Number.isFinite(t) && t >= 0 && t <= MAX_INSTANT_MS ? t : undefined;
}
