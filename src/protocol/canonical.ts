// Canonical JSON (sorted keys, no whitespace) and its hash: how a retried call or grade is
// recognised as "the same" whatever the key order the caller used.
import { hash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    // No prototype: a "__proto__" key (JSON.parse makes it an own property) stays a key instead of
    // setting the prototype and vanishing from the canonical form.
    const out = Object.create(null) as Record<string, unknown>;
    for (const k of Object.keys(v as object).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

/** SHA-256 (hex) of the parts, each followed by a NUL byte. One-shot: no Hash object per call. */
export function sha256(...parts: string[]): string {
  let s = '';
  for (const p of parts) s += p + '\0';
  return hash('sha256', s, 'hex');
}
