import { describe, expect, it } from 'vitest';
import { canonicalJson, deepCanonicalJson, sha256 } from '../../src/protocol/canonical.js';

describe('canonicalJson', () => {
  it('sorts keys at every level and drops undefined values', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('keeps a "__proto__" key as a key, so such arguments never hash like an empty object', () => {
    const parsed = JSON.parse('{"__proto__":{"x":1}}') as unknown;
    expect(canonicalJson(parsed)).toBe('{"__proto__":{"x":1}}');
    expect(sha256('tool', canonicalJson(parsed))).not.toBe(sha256('tool', canonicalJson({})));
  });
});

describe('canonicalJson at any depth', () => {
  /** The form before it was written with its own stack: JSON.stringify of a copy with sorted keys. */
  const recursive = (v: unknown): string | undefined => JSON.stringify(sortKeys(v));
  function sortKeys(v: unknown): unknown {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v && typeof v === 'object') {
      const out = Object.create(null) as Record<string, unknown>;
      for (const k of Object.keys(v).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
      return out;
    }
    return v;
  }

  it('writes the same text with its own stack as the recursive form, for every kind of value', () => {
    let seed = 11;
    const rand = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
    const gen = (depth: number): unknown => {
      const kind = depth > 5 ? rand(6) : rand(9);
      switch (kind) {
        case 0: return null;
        case 1: return rand(2) === 0;
        case 2: return rand(1000) - 500 + rand(7) / 8;
        case 3: return ['', 'a', 'é "q" \\ \n', '\u2028', 'key'][rand(5)];
        case 4: return undefined;
        case 5: return Number.NaN;
        case 6: return Array.from({ length: rand(4) }, () => gen(depth + 1));
        default: return Object.fromEntries(Array.from({ length: rand(5) }, () => [['b', 'a', '__proto__', 'é', '10', '2', '', '01', '4294967294', '4294967295', '-1', '1.5'][rand(12)]!, gen(depth + 1)]));
      }
    };
    for (let i = 0; i < 3_000; i++) {
      const v = gen(0);
      expect(deepCanonicalJson(v), JSON.stringify(v)).toBe(recursive(v));
      expect(canonicalJson(v)).toBe(recursive(v));
    }
    expect(deepCanonicalJson(undefined)).toBeUndefined();
    expect(deepCanonicalJson([undefined, () => 1, Symbol('s')])).toBe('[null,null,null]');
    expect(deepCanonicalJson({ f: () => 1, s: Symbol('s'), u: undefined, n: 1 })).toBe('{"n":1}');
  });

  it('writes a value 200,000 levels deep (the recursive form threw RangeError past about 4,000)', () => {
    const text = '['.repeat(200_000) + '{"b":1,"a":[]}' + ']'.repeat(200_000);
    const deep = JSON.parse(text) as unknown;
    expect(() => recursive(deep)).toThrow(RangeError);
    expect(canonicalJson(deep)).toBe('['.repeat(200_000) + '{"a":[],"b":1}' + ']'.repeat(200_000));
    // Past the recursive form's depth, the same text as it writes below it.
    const at = (n: number) => JSON.parse('[{"z":1,"10":2,"a":'.repeat(n) + '0' + '}]'.repeat(n)) as unknown;
    expect(canonicalJson(at(3_000))).toBe('[{"10":2,"a":'.repeat(3_000) + '0' + ',"z":1}]'.repeat(3_000));
    const obj = JSON.parse('{"x":'.repeat(50_000) + '1' + '}'.repeat(50_000)) as unknown;
    expect(sha256(canonicalJson(obj))).toBe(sha256('{"x":'.repeat(50_000) + '1' + '}'.repeat(50_000)));
  });
});
