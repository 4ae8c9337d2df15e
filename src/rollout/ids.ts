// Ids the server mints for rollouts and calls (a door's session, episode, task or one-off grade). The
// time comes first, at a fixed width, so ids sort by creation: they land at the end of the record's
// trace_id and call_id indexes, where random ids landed anywhere in them and cost each commit about
// 80 us (SQLite, measured in-process). Random bits follow, so an id is never guessed (some are
// credentials: an ORS session id). They come from a pooled CSPRNG buffer, refilled every 4 KiB, as
// Node's randomUUID does: a randomBytes(16) per id cost about 10 us here.
import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(4096);
let used = pool.length;

function random(bytes: number, encoding: 'hex' | 'base64url'): string {
  if (used + bytes > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const out = pool.toString(encoding, used, used + bytes);
  used += bytes;
  return out;
}

/** `prefix`, the time in base 36 (9 characters: fixed until the year 5188), then `bytes` random bytes. */
export function timeOrderedId(prefix: string, bytes = 16, encoding: 'hex' | 'base64url' = 'base64url', now = Date.now()): string {
  if (bytes < 1 || bytes > 64) throw new RangeError(`random part of 1 to 64 bytes, not ${bytes}`);
  return `${prefix}${now.toString(36).padStart(9, '0')}${random(bytes, encoding)}`;
}
