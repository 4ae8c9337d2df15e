import { describe, expect, it } from 'vitest';
import { extractNumbers, parseNumber } from '../../src/grading/numbers.js';

describe('parseNumber', () => {
  it.each([
    ['$4.2M', { value: 4_200_000, unit: 'USD' }],
    ['4,200,000', { value: 4_200_000 }],
    ['12.5%', { value: 12.5, unit: '%' }],
    ['(1.2)', { value: -1.2 }],
    ['1.2 billion', { value: 1_200_000_000 }],
    ['-3k', { value: -3000 }],
    ['−7', { value: -7 }],
    ['-$3.5', { value: -3.5, unit: 'USD' }],
    ['$-3.5', { value: -3.5, unit: 'USD' }],
    ['USD 12 bn', { value: 12_000_000_000, unit: 'USD' }],
    ['3 million dollars', { value: 3_000_000, unit: 'USD' }],
    ['€2.5m', { value: 2_500_000, unit: 'EUR' }],
    ['.5', { value: 0.5 }],
    ['1e3', { value: 1000 }],
    ['42.', { value: 42 }],
    ['  7  ', { value: 7 }],
    ['($2.1M)', { value: -2_100_000, unit: 'USD' }],
  ])('reads %s', (text, expected) => {
    expect(parseNumber(text)).toEqual(expected);
  });

  it.each([[''], ['abc'], ['about 4'], ['4 apples'], ['(4'], ['1,5']])('returns null for %j', (text) => {
    expect(parseNumber(text)).toBeNull();
  });

  it('leaves a spaced single letter alone', () => {
    expect(parseNumber('5 m')).toBeNull();
  });
});

describe('extractNumbers', () => {
  it('finds every number with its unit and position', () => {
    const found = extractNumbers('Revenue was $4.2M in Q3, up 12.5% from (0.3) last year.');
    expect(found.map((f) => [f.value, f.unit, f.raw])).toEqual([
      [4_200_000, 'USD', '$4.2M'],
      [12.5, '%', '12.5%'],
      [-0.3, undefined, '(0.3)'],
    ]);
    expect(found[0]?.index).toBe(12);
  });

  it('does not read digits inside identifiers such as Q3, FY2023 or v1.2', () => {
    expect(extractNumbers('Q3 FY2023 v1.2')).toEqual([]);
  });

  it('keeps an unbalanced parenthesis out of the number', () => {
    const [n] = extractNumbers('(see 3 above');
    expect(n).toMatchObject({ value: 3, raw: '3' });
    const [m] = extractNumbers('(3 and more');
    expect(m).toMatchObject({ value: 3, raw: '3', index: 1 });
  });

  it('splits comma-separated lists that are not thousands groups', () => {
    expect(extractNumbers('1, 2, 3 and 1,5').map((f) => f.value)).toEqual([1, 2, 3, 1, 5]);
  });

  it('returns an empty list for text without numbers', () => {
    expect(extractNumbers('no numbers here')).toEqual([]);
  });
});
