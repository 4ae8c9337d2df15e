import { describe, expect, it } from 'vitest';
import { calculate, parseFormula } from '../../src/grading/formula.js';
import { thrown } from '../helpers/codes.js';

describe('formula evaluation', () => {
  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 - 4 - 3', 3], // left-associative: (10 - 4) - 3
    ['8 / 4 / 2', 1],
    ['2 ^ 3 ^ 2', 512], // right-associative: 2^(3^2)
    ['-2 ^ 2', -4], // ^ binds tighter than unary minus
    ['(-2) ^ 2', 4],
    ['2 ^ -1', 0.5],
    ['2 * -3', -6],
    ['-(-3)', 3],
    ['+4', 4],
    ['1e-2 + .5', 0.51],
    ['min(3, 1, 2)', 1],
    ['max(3)', 3],
    ['abs(-3) + floor(2.7) + ceil(2.1)', 8],
    ['exp(0) + sqrt(16)', 5],
    ['log(exp(2))', 2],
    ['2 * 3 ^ 2', 18],
  ])('%s = %d', (src, expected) => {
    expect(calculate(src, {})).toBeCloseTo(expected, 12);
  });

  it('reads sub-grader names as variables', () => {
    expect(calculate('0.9 * exact + 0.1 * fuzzy', { exact: 1, fuzzy: 0.5 })).toBeCloseTo(0.95, 12);
  });

  it('accepts names with digits and underscores', () => {
    expect(calculate('min(rouge_1, part2)', { rouge_1: 0.4, part2: 0.6 })).toBe(0.4);
  });
});

describe('formula errors carry the position of the fault', () => {
  it.each([
    ['a + ', ['a'], 4, 'end of the formula'],
    ['a $ b', ['a', 'b'], 2, 'unexpected character'],
    ['foo(1)', [], 0, 'unknown function'],
    ['a + zz', ['a'], 4, 'unknown name "zz"'],
    ['(1 + 2', [], 6, 'expected ")"'],
    ['1 2', [], 2, 'unexpected "2"'],
    ['abs(1, 2)', [], 0, 'exactly one argument'],
    ['min + 1', [], 0, 'needs arguments'],
    [')', [], 0, 'expected a number'],
    ['', [], 0, 'end of the formula'],
    ['min()', [], 4, 'expected a number'],
  ])('%j', (src, names, position, message) => {
    const e = thrown(() => parseFormula(src, names));
    expect(e.code).toBe('RFT_ERR_FORMULA');
    expect(e.details).toEqual({ position });
    expect(e.message).toContain(message);
  });

  it('reports division by zero at the operator', () => {
    const e = thrown(() => calculate('1 + a / (b - b)', { a: 1, b: 0.5 }));
    expect(e.code).toBe('RFT_ERR_FORMULA');
    expect(e.details).toEqual({ position: 6 });
    expect(e.message).toContain('division by zero');
  });

  it.each([
    ['log(0)', 0],
    ['2 + sqrt(0 - 1)', 4],
    ['exp(1000)', 0],
    ['10 ^ 400', 3],
    ['1e308 * 10', 6],
  ])('refuses the non-finite result of %s', (src, position) => {
    const e = thrown(() => calculate(src, {}));
    expect(e.code).toBe('RFT_ERR_FORMULA');
    expect(e.details).toEqual({ position });
    expect(e.message).toContain('not a finite number');
  });

  it('refuses a variable with no value at evaluation time', () => {
    const e = thrown(() => calculate('a * 2', {}));
    expect(e.code).toBe('RFT_ERR_FORMULA');
    expect(e.details).toEqual({ position: 0 });
  });

  it('never evaluates JavaScript', () => {
    expect(thrown(() => parseFormula('constructor.constructor("return 1")()')).code).toBe('RFT_ERR_FORMULA');
    expect(thrown(() => calculate('__proto__', {})).code).toBe('RFT_ERR_FORMULA');
  });
});
