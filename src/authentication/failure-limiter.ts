// Failed authentication, counted per client address. Past `max` failures in a window, the address
// is refused before its credential is checked or its body read, until the window ends; only a key
// this process has already accepted still passes (a trainer sharing an egress address with a
// guesser keeps working, and a guess is never compared). Fixed windows, in memory, bounded.
import { isIPv6 } from 'node:net';

export interface FailureLimiterOptions {
  max: number;
  windowMs: number;
  /** Most addresses tracked; the oldest are forgotten first (default 100,000: a few MB). */
  maxEntries?: number;
  now?: () => number;
}

interface Entry {
  failures: number;
  resetAt: number;
}

/**
 * The unit an address is counted by: an IPv4 address (IPv4-mapped IPv6 included), or the /64 of
 * an IPv6 address, since one host commonly holds a whole /64.
 */
export function addressKey(ip: string): string {
  if (ip.startsWith('::ffff:') && ip.includes('.')) return ip.slice(7);
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.split('::', 2);
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '').toLowerCase()).join(':') + '::/64';
}

export class FailureLimiter {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;
  private readonly maxEntries: number;

  constructor(private readonly o: FailureLimiterOptions) {
    this.now = o.now ?? Date.now;
    this.maxEntries = o.maxEntries ?? 100_000;
  }

  /** Seconds until the address may authenticate again; 0 when it may now. */
  blockedFor(ip: string): number {
    const e = this.entries.get(addressKey(ip));
    if (!e) return 0;
    const left = e.resetAt - this.now();
    if (left <= 0) return 0;
    return e.failures >= this.o.max ? Math.ceil(left / 1000) : 0;
  }

  fail(ip: string): void {
    const key = addressKey(ip);
    const now = this.now();
    let e = this.entries.get(key);
    if (!e || e.resetAt <= now) {
      this.entries.delete(key);
      e = { failures: 0, resetAt: now + this.o.windowMs };
      this.entries.set(key, e);
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    }
    e.failures++;
  }

  get size(): number {
    return this.entries.size;
  }
}
