import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { cutValue, jsonDepthExceeds, valueDepthExceeds } from '../../src/protocol/json-depth.js';

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

describe('cutValue', () => {
  const cut = (v: unknown) => {
    const r = cutValue(Buffer.from(JSON.stringify(v)), ['sample', 'output_json']);
    return r === undefined ? undefined : (JSON.parse(r.toString()) as unknown);
  };

  it('replaces sample.output_json, and only it, by null when it is an array or object', () => {
    fc.assert(
      fc.property(value, value, value, fc.dictionary(tricky, value, { maxKeys: 3 }), (answer, item, other, extra) => {
        const body = { ...extra, sample: { output_text: 'x', output_json: answer, output_json_x: other, nested: { output_json: other } }, item: { output_json: item } };
        const expected = answer !== null && typeof answer === 'object' ? { ...body, sample: { ...body.sample, output_json: null } } : undefined;
        expect(cut(body)).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('cuts an answer nested 100,000 levels deep without parsing it', () => {
    const body = Buffer.from(`{"sample":{"output_text":"42","output_json":${'['.repeat(100_000)}"]}"${']'.repeat(100_000)}},"item":{"a":1}}`);
    const r = cutValue(body, ['sample', 'output_json'])!;
    expect(JSON.parse(r.toString())).toEqual({ sample: { output_text: '42', output_json: null }, item: { a: 1 } });
  });
});

describe('valueDepthExceeds', () => {
  it('agrees with jsonDepthExceeds on the value JSON.parse gives, at any depth, without recursion', () => {
    const texts = ['1', '"[["', '[]', '{}', '[[]]', '{"a":{"b":[1,{"c":[]}]}}', '[1,[2,[3,[4]]],{"x":{}}]', '{"s":"[[[[[[","t":[[[]]]}'];
    for (const text of texts) {
      for (let max = 1; max <= 6; max++) expect(valueDepthExceeds(JSON.parse(text), max), `${text} ${max}`).toBe(jsonDepthExceeds(`${' '.repeat(64)}${text}`, max));
    }
    const deep = JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)) as unknown;
    expect(valueDepthExceeds(deep, 64)).toBe(true);
    expect(valueDepthExceeds(deep, 200_000)).toBe(false);
    expect(valueDepthExceeds(deep, 199_999)).toBe(true);
  });
});
