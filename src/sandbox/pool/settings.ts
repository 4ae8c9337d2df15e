// How far the warm pool may grow when it learns the step, for every driver that has one (bwrap and
// process prepare workdirs, Docker starts containers), and the pool's sizing from it.
import { z } from 'zod';
import type { PoolSizing } from './warm-pool.js';

export const learnSettings = {
  /**
   * Memory the warm pool may hold beyond its floor when it learns the trainer's step (it grows to the
   * step's burst of new rollouts between steps, bounded by this at the driver's measured cost of an idle
   * prepared sandbox, and by the sandbox cap); 0 turns the learning off (the floor only).
   */
  RFT_SANDBOX_WARM_MAX_MB: z.coerce.number().int().min(0).max(1_000_000).default(512),
  /** No new rollout for this long: training has stopped, and the pool shrinks back to its floor. */
  RFT_SANDBOX_WARM_IDLE_MS: z.coerce.number().int().min(1_000).default(30 * 60_000),
};

/** A driver's learning: within `maxMb` (at its measured cost of a prepared sandbox) and `cap`; back to the floor after `idleMs`. */
export interface WarmLearning {
  maxMb: number;
  idleMs: number;
  cap: number;
  gapMs?: number;
}

/** A driver's `warmLearning` option from the settings: none with a zero (or unset) budget. */
export function learningOption(maxMb: number | undefined, idleMs: number | undefined, cap: number): { warmLearning?: WarmLearning } {
  return maxMb ? { warmLearning: { maxMb, idleMs: idleMs ?? learnSettings.RFT_SANDBOX_WARM_IDLE_MS.parse(undefined), cap } } : {};
}

/**
 * Arrivals further apart than this are separate bursts: a step's new rollouts reach the driver all
 * at once (bench/steps.ts: each 500-rollout step was one burst of 500 on a loaded machine), while
 * steps are tens of seconds apart.
 */
export const BURST_GAP_MS = 2_000;

/** The floor, and how far the learned size may grow: the cap, and the budget at a prepared sandbox's cost. */
export function poolSizing(floor: number, learn: WarmLearning | undefined, preparedKb: number): PoolSizing {
  return {
    floor,
    max: learn ? Math.min(learn.cap, Math.floor((learn.maxMb * 1024) / preparedKb)) : 0,
    gapMs: learn?.gapMs ?? BURST_GAP_MS,
    idleMs: learn?.idleMs ?? 0,
    shown: { budgetMb: learn?.maxMb ?? null, preparedKb: learn ? preparedKb : null, cap: learn?.cap ?? null },
  };
}
