// How deep a JSON text nests arrays and objects, found by a scan of its characters, so a
// 5,000-level body or `arguments` string is refused before anything recursive (JSON.parse's
// callers, canonical JSON, zod, the store) walks it. Strings are skipped with indexOf (memchr for a
// Buffer), so the scan costs a fraction of JSON.parse on ordinary bodies.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * true when the JSON text nests deeper than `max`. Works on UTF-8 bytes (no continuation byte
 * equals an ASCII one) and on strings alike; brackets inside strings do not count. Text that is
 * not JSON gets some answer; JSON.parse refuses it afterwards anyway.
 */
export function jsonDepthExceeds(text: Buffer | string, max: number): boolean {
  // Each level needs at least one character: a shorter text cannot be too deep.
  if (text.length <= max) return false;
  // Nor can a text with at most `max` opening brackets (strings included: an upper bound), which is
  // most rows: counted with a few native indexOf calls instead of a walk over every character.
  if (openingsAtMost(text, max)) return false;
  return typeof text === 'string' ? exceedsString(text, max) : exceedsBytes(text, max);
}

function openingsAtMost(text: Buffer | string, max: number): boolean {
  const find: (c: number, from: number) => number =
    typeof text === 'string' ? (c, from) => text.indexOf(String.fromCharCode(c), from) : (c, from) => text.indexOf(c, from);
  let count = 0;
  for (const open of [OPEN_ARRAY, OPEN_OBJECT]) {
    for (let i = find(open, 0); i !== -1; i = find(open, i + 1)) if (++count > max) return false;
  }
  return true;
}

/** Index of the quote closing the string that opens at `i`, or -1: the next one after an even run of backslashes. */
function stringEnd(b: Buffer, i: number): number {
  let j = i;
  for (;;) {
    j = b.indexOf(QUOTE, j + 1);
    if (j === -1) return -1;
    let k = j - 1;
    while (b[k] === BACKSLASH) k--;
    if ((j - 1 - k) % 2 === 0) return j;
  }
}

function exceedsBytes(b: Buffer, max: number): boolean {
  let depth = 0;
  const n = b.length;
  for (let i = 0; i < n; i++) {
    const c = b[i]!;
    if (c === QUOTE) {
      i = stringEnd(b, i);
      if (i === -1) return false;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}

/** Index of the bracket closing the array or object that opens at `i`, or -1. */
function containerEnd(b: Buffer, i: number): number {
  let depth = 0;
  for (let j = i; j < b.length; j++) {
    const c = b[j]!;
    if (c === QUOTE) {
      j = stringEnd(b, j);
      if (j === -1) return -1;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) depth++;
    else if ((c === CLOSE_ARRAY || c === CLOSE_OBJECT) && --depth === 0) return j;
  }
  return -1;
}

const COMMA = 0x2c;
const NULL = Buffer.from('null');

/**
 * The JSON text with the array or object found at `path` (two keys: `{"a": {"b": <here>}}`) replaced
 * by null, or undefined when there is none. A scan of the bytes like jsonDepthExceeds, so it works
 * at any depth without parsing: how a grade keeps the part of its body the model wrote
 * (sample.output_json) from making the whole request unusable. Keys are compared as written (the
 * trainer writes them plainly).
 */
export function cutValue(b: Buffer, path: readonly [string, string]): Buffer | undefined {
  const spans: [number, number][] = [];
  const keys: (string | undefined)[] = [];
  const isObject: boolean[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c === QUOTE) {
      const end = stringEnd(b, i);
      if (end === -1) return undefined;
      if (expectKey) {
        if (depth <= 2) keys[depth] = b.toString('utf8', i + 1, end);
        expectKey = false;
      }
      i = end;
    } else if (c === COMMA) {
      expectKey = isObject[depth] === true;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (depth === 2 && isObject[1] && isObject[2] && keys[1] === path[0] && keys[2] === path[1]) {
        const end = containerEnd(b, i);
        if (end === -1) return undefined;
        spans.push([i, end]);
        i = end;
        continue;
      }
      depth++;
      isObject[depth] = c === OPEN_OBJECT;
      expectKey = c === OPEN_OBJECT;
      if (depth <= 2) keys[depth] = undefined;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
      expectKey = false;
    }
  }
  if (spans.length === 0) return undefined;
  const parts: Buffer[] = [];
  let at = 0;
  for (const [start, end] of spans) {
    parts.push(b.subarray(at, start), NULL);
    at = end + 1;
  }
  parts.push(b.subarray(at));
  return Buffer.concat(parts);
}

function exceedsString(s: string, max: number): boolean {
  let depth = 0;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === QUOTE) {
      let j = i;
      for (;;) {
        j = s.indexOf('"', j + 1);
        if (j === -1) return false;
        let k = j - 1;
        while (s.charCodeAt(k) === BACKSLASH) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}

/**
 * true when a value (JSON.parse's, or a row built from it) nests arrays and objects deeper than
 * `max`: the check of a parsed trainer input before anything recursive (JSON.stringify into the
 * store, zod, a reply's serializer) walks it. Iterative, and it stops at the first level past max.
 */
export function valueDepthExceeds(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: [object, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child as object, depth + 1]);
    }
  }
  return false;
}
