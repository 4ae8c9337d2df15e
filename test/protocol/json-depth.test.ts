import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { jsonDepthExceeds } from '../../src/protocol/json-depth.js';

/** The reference: nesting depth of a parsed value (a scalar is 0, [] or {} is 1). */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (v !== null && typeof v === 'object') return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

// Strings full of what could fool a scanner: quotes, backslashes, brackets, multi-byte characters.
const tricky = fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', 'a', 'é', '漢', '🎲', '\n') });
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small' }, tricky, fc.integer(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('node'), { maxLength: 4 }),
  object: fc.dictionary(tricky, tie('node'), { maxKeys: 4 }),
})).node;

describe('jsonDepthExceeds', () => {
  it('agrees with the parsed depth, on bytes and on strings, whatever the strings hold', () => {
    fc.assert(
      fc.property(value, fc.integer({ min: 0, max: 8 }), (v, max) => {
        const text = JSON.stringify(v);
        const expected = depthOf(v) > max;
        expect(jsonDepthExceeds(text, max)).toBe(expected);
        expect(jsonDepthExceeds(Buffer.from(text), max)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('finds 5,000 levels, and ignores brackets inside strings', () => {
    expect(jsonDepthExceeds('['.repeat(5000) + ']'.repeat(5000), 64)).toBe(true);
    expect(jsonDepthExceeds(JSON.stringify({ a: '['.repeat(5000) }), 64)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ a: '\\"' + '{'.repeat(100) }), 64)).toBe(false);
  });
});
