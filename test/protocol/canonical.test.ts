import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256 } from '../../src/protocol/canonical.js';

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
