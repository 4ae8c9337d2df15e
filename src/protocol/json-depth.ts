// How deep a JSON text nests arrays and objects, found by a scan of its characters, so a
// 5,000-level body or `arguments` string is refused before anything recursive (JSON.parse's
// callers, canonical JSON, zod, the store) walks it.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * true when the JSON text nests deeper than `max`. Works on UTF-8 bytes (no continuation byte
 * equals an ASCII one) and on strings alike; brackets inside strings are skipped.
 */
export function jsonDepthExceeds(text: Buffer | string, max: number): boolean {
  // Each level needs at least one character: a shorter text cannot be too deep.
  if (text.length <= max) return false;
  const at: (i: number) => number = typeof text === 'string' ? (i) => text.charCodeAt(i) : (i) => text[i]!;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = at(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}
