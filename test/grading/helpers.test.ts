import { describe, expect, it } from 'vitest';
import { budgetPenalty, clamp01, gate, numericCloseness, setF1, weighted } from '../../src/grading/helpers.js';
import { errors } from '../../src/errors.js';
import { codeOf } from '../helpers/codes.js';

describe('clamp01', () => {
  it('limits values to the unit interval and maps NaN to 0', () => {
    expect([clamp01(-1), clamp01(0.3), clamp01(7), clamp01(Number.NaN)]).toEqual([0, 0.3, 1, 0]);
  });
});

describe('weighted', () => {
  it('averages scores by relative weight and reports each part', () => {
    // (1*3 + 0.5*1) / 4 = 0.875
    const r = weighted({ tests: { score: 1, weight: 3 }, style: { score: 0.5, weight: 1 } });
    expect(r.score).toBeCloseTo(0.875, 12);
    expect(r.subscores).toEqual({ tests: 1, style: 0.5 });
  });

  it('clamps out-of-range part scores before weighting', () => {
    const r = weighted({ a: { score: 2, weight: 1 }, b: { score: -1, weight: 1 } });
    expect(r.score).toBe(0.5);
    expect(r.subscores).toEqual({ a: 1, b: 0 });
  });

  it('refuses weights that sum to zero', () => {
    expect(codeOf(() => weighted({ a: { score: 1, weight: 0 } }))).toBe(errors.gradingArgument.code);
  });

  it('refuses a negative weight', () => {
    expect(codeOf(() => weighted({ a: { score: 1, weight: -1 }, b: { score: 1, weight: 2 } }))).toBe('RFT_ERR_GRADING_ARGUMENT');
  });
});

describe('gate', () => {
  it('passes the gated score through once the condition reaches the threshold', () => {
    expect(gate(1, 1, 0.7)).toBe(0.7);
  });

  it('gives 0 below the threshold', () => {
    expect(gate(0.99, 1, 0.7)).toBe(0);
  });
});

describe('budgetPenalty', () => {
  const usage = (used: number, limit = 20, exceeded = false) => ({ used, limit, exceeded });

  it('is 1 up to the target', () => {
    expect(budgetPenalty(usage(5), { target: 5 })).toBe(1);
  });

  it('falls linearly to the floor at the budget limit', () => {
    // target 4, limit 20: room 16; 12 used is 8 over, half way: 0.2 + 0.8 * 0.5 = 0.6
    expect(budgetPenalty(usage(12), { target: 4, floor: 0.2 })).toBeCloseTo(0.6, 12);
    expect(budgetPenalty(usage(20), { target: 4, floor: 0.2 })).toBeCloseTo(0.2, 12);
  });

  it('halves the distance to the floor every half-life when exponential', () => {
    expect(budgetPenalty(usage(7), { target: 5, kind: 'exponential', halfLife: 2 })).toBeCloseTo(0.5, 12);
    expect(budgetPenalty(usage(9), { target: 5, kind: 'exponential', halfLife: 2, floor: 0.2 })).toBeCloseTo(0.4, 12);
  });

  it('is continuous just past the target', () => {
    const at = budgetPenalty(usage(5), { target: 5 });
    const after = budgetPenalty(usage(5.001), { target: 5 });
    expect(at - after).toBeLessThan(0.001);
    expect(after).toBeLessThan(1);
  });

  it('gives the floor once the budget is exceeded', () => {
    expect(budgetPenalty(usage(21, 20, true), { target: 5, floor: 0.1 })).toBe(0.1);
  });

  it('reaches the floor at twice the target when the limit is not above the target', () => {
    expect(budgetPenalty(usage(10, 0), { target: 5 })).toBe(0);
    expect(budgetPenalty(usage(7.5, 0), { target: 5 })).toBeCloseTo(0.5, 12);
  });

  it('refuses a floor outside the unit interval', () => {
    expect(codeOf(() => budgetPenalty(usage(1), { target: 1, floor: 2 }))).toBe('RFT_ERR_GRADING_ARGUMENT');
  });
});

describe('numericCloseness', () => {
  it('scores 1 within the relative tolerance', () => {
    expect(numericCloseness(4_213_000, 4_200_000)).toBe(1); // 0.31% off, tolerance 0.5%
  });

  it('decays linearly to 0 at zeroAt relative error', () => {
    // 50% off with relTol 0 and zeroAt 1: 0.5
    expect(numericCloseness(150, 100, { relTol: 0, absTol: 0 })).toBeCloseTo(0.5, 12);
    expect(numericCloseness(200, 100, { relTol: 0, absTol: 0 })).toBe(0);
    expect(numericCloseness(-100, 100)).toBe(0);
  });

  it('is continuous at the tolerance edge', () => {
    const edge = numericCloseness(101.0000001, 100, { relTol: 0.01 });
    expect(edge).toBeGreaterThan(0.999999);
    expect(edge).toBeLessThan(1);
  });

  it('uses absolute error when the expected value is 0', () => {
    expect(numericCloseness(0.25, 0, { absTol: 0 })).toBeCloseTo(0.75, 12);
  });

  it('scores non-finite answers 0', () => {
    expect(numericCloseness(Number.NaN, 1)).toBe(0);
    expect(numericCloseness(Number.POSITIVE_INFINITY, 1)).toBe(0);
  });
});

describe('setF1', () => {
  it('computes precision, recall and F1 over distinct members', () => {
    // predicted {a,b,c}, expected {b,c,d,e}: hits 2, p = 2/3, r = 1/2, f1 = 2*(1/3)/(7/6) = 4/7
    const r = setF1(['a', 'b', 'c', 'c'], ['b', 'c', 'd', 'e']);
    expect(r.precision).toBeCloseTo(2 / 3, 12);
    expect(r.recall).toBeCloseTo(0.5, 12);
    expect(r.f1).toBeCloseTo(4 / 7, 12);
  });

  it('scores two empty sets as full agreement', () => {
    expect(setF1([], [])).toEqual({ precision: 1, recall: 1, f1: 1 });
  });

  it('scores an empty prediction 0', () => {
    expect(setF1([], ['x'])).toEqual({ precision: 0, recall: 0, f1: 0 });
  });
});
