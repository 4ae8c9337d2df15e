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

/**
 * JSON.stringify with every object's keys sorted, written with a stack of its own instead of the
 * call stack: a value of any depth (JSON.parse builds one 200,000 levels deep without complaint)
 * gets its form where the recursive walk, and JSON.stringify itself, throw "Maximum call stack
 * size exceeded" past about 4,000 levels. The same text as JSON.stringify of a copy with sorted
 * keys (an object is its own enumerable keys: no toJSON; undefined, functions and symbols are
 * dropped from objects and null in arrays). A "__proto__" key (JSON.parse makes it an own
 * property) stays a key.
 */
export function canonicalJson(value: unknown): string {
  if (!isContainer(value)) return JSON.stringify(value);
  let out = '';
  const stack: Frame[] = [];
  const open = (v: object): void => {
    if (Array.isArray(v)) {
      out += '[';
      stack.push({ items: v, next: 0, isArray: true, wrote: false });
    } else {
      out += '{';
      const keys = Object.keys(v).sort();
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

function isContainer(v: unknown): v is object {
  return v !== null && typeof v === 'object';
}

/** SHA-256 (hex) of the parts, each followed by a NUL byte. One-shot: no Hash object per call. */
export function sha256(...parts: string[]): string {
  let s = '';
  for (const p of parts) s += p + '\0';
  return hash('sha256', s, 'hex');
}
