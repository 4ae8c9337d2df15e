// Building blocks for TypeScript graders (graders/*.ts). Partial credit trains better than 0/1
// (see the wire contract, section 6), so every helper here is continuous where it can be: a
// slightly worse answer gets a slightly lower score, never a cliff.
import { errors } from '../errors.js';
import type { BudgetUsage } from '../store/records.js';

export { parseNumber, extractNumbers } from './numbers.js';
export type { ParsedNumber, FoundNumber } from './numbers.js';

/** x limited to [0, 1]; NaN counts as 0 so a broken sub-score can never raise a total. */
export function clamp01(x: number): number {
  if (Number.isNaN(x)) return 0;
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

function requireFinite(fn: string, what: string, x: number): void {
  if (!Number.isFinite(x)) throw errors.gradingArgument(fn, `${what} must be a finite number, got ${x}`);
}

/**
 * Weighted mean of named parts. Weights are relative (they need not sum to 1); each part's score
 * is clamped to [0, 1] first, and `subscores` reports those clamped scores by name.
 */
export function weighted(parts: Record<string, { score: number; weight: number }>): {
  score: number;
  subscores: Record<string, number>;
} {
  let total = 0;
  let weights = 0;
  const subscores: Record<string, number> = {};
  for (const [name, { score, weight }] of Object.entries(parts)) {
    requireFinite('weighted', `weight of "${name}"`, weight);
    if (weight < 0) throw errors.gradingArgument('weighted', `weight of "${name}" is negative (${weight})`);
    const s = clamp01(score);
    subscores[name] = s;
    total += s * weight;
    weights += weight;
  }
  if (weights <= 0) throw errors.gradingArgument('weighted', 'the weights sum to 0; give at least one part a positive weight');
  return { score: total / weights, subscores };
}

/**
 * `then` counts only once `condition` reaches `threshold`: "tests must pass before style counts".
 * Below the threshold the result is 0, so a model cannot farm the cheap part of the reward.
 */
export function gate(condition: number, threshold: number, then: number): number {
  requireFinite('gate', 'threshold', threshold);
  return condition >= threshold ? then : 0;
}

export interface BudgetPenaltyOptions {
  /** Calls that cost nothing: the multiplier is 1 up to here. */
  target: number;
  /** How the multiplier falls past `target` (default 'linear'). */
  kind?: 'linear' | 'exponential';
  /** The lowest multiplier, also used once the budget is exceeded (default 0). */
  floor?: number;
  /** exponential: calls past `target` that halve the distance to `floor` (default: a quarter of the room up to the limit, at least 1). */
  halfLife?: number;
}

/**
 * A multiplier in [floor, 1] for the budget a rollout used. 1 up to `target` budget units, then a
 * continuous decay: linear reaches `floor` exactly at the budget limit (or at 2 x target when the
 * limit is not above target); exponential halves the distance to `floor` every `halfLife` units.
 * An exceeded budget gives `floor`.
 */
export function budgetPenalty(usage: BudgetUsage, opts: BudgetPenaltyOptions): number {
  const { target, kind = 'linear', floor = 0 } = opts;
  requireFinite('budgetPenalty', 'target', target);
  requireFinite('budgetPenalty', 'floor', floor);
  if (target < 0) throw errors.gradingArgument('budgetPenalty', `target must be >= 0, got ${target}`);
  if (floor < 0 || floor > 1) throw errors.gradingArgument('budgetPenalty', `floor must be in [0, 1], got ${floor}`);
  if (usage.exceeded) return floor;
  const over = usage.used - target;
  if (over <= 0) return 1;
  const room = Number.isFinite(usage.limit) && usage.limit > target ? usage.limit - target : Math.max(target, 1);
  if (kind === 'linear') return floor + (1 - floor) * clamp01(1 - over / room);
  const halfLife = opts.halfLife ?? Math.max(1, room / 4);
  requireFinite('budgetPenalty', 'halfLife', halfLife);
  if (halfLife <= 0) throw errors.gradingArgument('budgetPenalty', `halfLife must be > 0, got ${halfLife}`);
  return floor + (1 - floor) * Math.pow(0.5, over / halfLife);
}

export interface ClosenessOptions {
  /** Relative error that still scores 1 (default 0.005, i.e. 0.5%, which forgives "4.2M" for 4,213,000). */
  relTol?: number;
  /** Absolute error that still scores 1 (default 1e-9); the larger of the two tolerances applies. */
  absTol?: number;
  /** Relative error at which the score reaches 0 (default 1, i.e. 100% off). */
  zeroAt?: number;
}

/**
 * 1 within tolerance, then a straight line down to 0 at `zeroAt` relative error. When `expected`
 * is 0 the error is taken as absolute (relative to 1). Non-finite inputs score 0.
 */
export function numericCloseness(actual: number, expected: number, opts: ClosenessOptions = {}): number {
  const { relTol = 0.005, absTol = 1e-9, zeroAt = 1 } = opts;
  if (!Number.isFinite(actual) || !Number.isFinite(expected)) return 0;
  if (relTol < 0 || absTol < 0 || !(zeroAt > 0)) {
    throw errors.gradingArgument('numericCloseness', 'relTol and absTol must be >= 0 and zeroAt > 0');
  }
  const diff = Math.abs(actual - expected);
  const tolerance = Math.max(absTol, relTol * Math.abs(expected));
  if (diff <= tolerance) return 1;
  const scale = expected === 0 ? 1 : Math.abs(expected);
  const err = diff / scale;
  const tolErr = tolerance / scale;
  if (zeroAt <= tolErr) return 0;
  return clamp01((zeroAt - err) / (zeroAt - tolErr));
}

/**
 * Precision, recall and F1 of two sets of strings (duplicates ignored; normalize case and spacing
 * before calling if they should not matter). Two empty sets agree perfectly (all 1); an empty
 * prediction against a non-empty expectation scores 0.
 */
export function setF1(
  predicted: Iterable<string>,
  expected: Iterable<string>,
): { precision: number; recall: number; f1: number } {
  const p = new Set(predicted);
  const e = new Set(expected);
  if (p.size === 0 && e.size === 0) return { precision: 1, recall: 1, f1: 1 };
  let hits = 0;
  for (const x of p) if (e.has(x)) hits++;
  const precision = p.size ? hits / p.size : 0;
  const recall = e.size ? hits / e.size : 0;
  const f1 = precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
  return { precision, recall, f1 };
}
