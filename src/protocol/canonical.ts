// Canonical JSON (sorted keys, no whitespace) and its hash: how a retried call or grade is
// recognised as "the same" whatever the key order the caller used.
import { hash } from 'node:crypto';

/** An array or object being written: its remaining members, and what closes it. */
interface Frame {
  /** Array elements, or [key, value] pairs already sorted by key. */
  items: unknown[] | [string, unknown][];
  next: number;
  isArray: boolean;
  /** Whether a member has been written (a comma goes before the next one). */
  wrote: boolean;
}

/** Deeper than this, the value is written by deepCanonicalJson (JSON.stringify itself throws past about 4,000). */
const RECURSIVE_DEPTH = 1_000;
/** Thrown by sortKeys past RECURSIVE_DEPTH (made once: it is a signal, its stack is never read). */
const TOO_DEEP = new Error('too deep for the recursive form');

/**
 * JSON.stringify of a copy with every object's keys sorted: no toJSON; undefined, functions and symbols
 * are dropped from objects and null in arrays; a "__proto__" key (JSON.parse makes it an own property)
 * stays a key. A value of any depth (JSON.parse builds one 200,000 levels deep without complaint) gets
 * its form: past RECURSIVE_DEPTH levels it is written with a stack of its own, to the same text.
 */
export function canonicalJson(value: unknown): string {
  try {
    return JSON.stringify(sortKeys(value, 0));
  } catch (e) {
    if (e !== TOO_DEEP) throw e;
    return deepCanonicalJson(value);
  }
}

function sortKeys(v: unknown, depth: number): unknown {
  if (depth > RECURSIVE_DEPTH) throw TOO_DEEP;
  if (Array.isArray(v)) return v.map((x) => sortKeys(x, depth + 1));
  if (v && typeof v === 'object') {
    // No prototype: a "__proto__" key stays a key instead of setting the prototype and vanishing.
    const out = Object.create(null) as Record<string, unknown>;
    for (const k of Object.keys(v as object).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k], depth + 1);
    return out;
  }
  return v;
}

/** canonicalJson's text, written with a stack of its own instead of the call stack. */
export function deepCanonicalJson(value: unknown): string {
  if (!isContainer(value)) return JSON.stringify(value);
  let out = '';
  const stack: Frame[] = [];
  const open = (v: object): void => {
    if (Array.isArray(v)) {
      out += '[';
      stack.push({ items: v, next: 0, isArray: true, wrote: false });
    } else {
      out += '{';
      const keys = sortedKeys(v);
      stack.push({ items: keys.map((k) => [k, (v as Record<string, unknown>)[k]] as [string, unknown]), next: 0, isArray: false, wrote: false });
    }
  };
  open(value);
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!;
    if (f.next === f.items.length) {
      out += f.isArray ? ']' : '}';
      stack.pop();
      continue;
    }
    const member = f.items[f.next++];
    let v: unknown;
    let prefix: string;
    if (f.isArray) {
      v = member;
      prefix = '';
    } else {
      const [k, raw] = member as [string, unknown];
      v = raw;
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      prefix = `${JSON.stringify(k)}:`;
    }
    out += (f.wrote ? ',' : '') + prefix;
    f.wrote = true;
    if (isContainer(v)) open(v);
    else out += JSON.stringify(v) ?? 'null';
  }
  return out;
}

/** A key JavaScript orders as an array index: an object lists those first, by number, whatever their insertion. */
const INDEX = /^(?:0|[1-9]\d{0,9})$/;
const isIndex = (k: string): boolean => INDEX.test(k) && Number(k) < 2 ** 32 - 1;

/**
 * The keys in the order a copy built by inserting them sorted lists them (the form's text before it had a
 * stack of its own, so every recorded hash stays the same): index-like keys first by number, then the rest sorted.
 */
function sortedKeys(v: object): string[] {
  const keys = Object.keys(v).sort();
  const indices = keys.filter(isIndex);
  if (indices.length === 0) return keys;
  return [...indices.sort((a, b) => Number(a) - Number(b)), ...keys.filter((k) => !isIndex(k))];
}

function isContainer(v: unknown): v is object {
  return v !== null && typeof v === 'object';
}

/** SHA-256 (hex) of the parts, each followed by a NUL byte. One-shot: no Hash object per call. */
export function sha256(...parts: string[]): string {
  let s = '';
  for (const p of parts) s += p + '\0';
  return hash('sha256', s, 'hex');
}
