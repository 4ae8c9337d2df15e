// The settings the host-bound drivers (bwrap, process) share: the warm pool of workdirs kept
// prepared ahead (../pool/warm-pool.ts) and its floor; how far it may grow when it learns the step is
// every pool's (../pool/settings.ts).
import { z } from 'zod';
import type { LocalDriverOptions } from './local-driver.js';
import { learningOption, learnSettings } from '../pool/settings.js';

export const localSettings = {
  /**
   * bwrap (and process) sandboxes always kept prepared for new rollouts, refilled in the background:
   * the pool's floor (an idle prepared bwrap sandbox costs about 0.75 MB and 2 processes).
   */
  RFT_SANDBOX_WARM: z.coerce.number().int().min(0).max(10_000).default(2),
  ...learnSettings,
};

export interface LocalOptions {
  /** Prepared bwrap/process sandboxes kept at least (RFT_SANDBOX_WARM). */
  localWarm: number;
  /** The learned pool's memory budget, MB (RFT_SANDBOX_WARM_MAX_MB; 0: no learning). */
  localWarmMaxMb: number;
  /** Quiet time after which the learned pool shrinks to its floor (RFT_SANDBOX_WARM_IDLE_MS). */
  localWarmIdleMs: number;
  /** RFT_SANDBOX_CAP when set (the pool never learns beyond it); unset, the driver's default cap. */
  localCap: number | undefined;
}

export function localOptions(s: { RFT_SANDBOX_WARM: number; RFT_SANDBOX_WARM_MAX_MB: number; RFT_SANDBOX_WARM_IDLE_MS: number }, cap: number | undefined): LocalOptions {
  return { localWarm: s.RFT_SANDBOX_WARM, localWarmMaxMb: s.RFT_SANDBOX_WARM_MAX_MB, localWarmIdleMs: s.RFT_SANDBOX_WARM_IDLE_MS, localCap: cap };
}

/** The pool's part of a local driver's options (LocalDriverOptions), from the module's options. */
export function warmPoolOptions(o: Partial<LocalOptions>, defaultCap: number): Pick<LocalDriverOptions, 'warmPool' | 'warmLearning'> {
  return {
    ...(o.localWarm !== undefined ? { warmPool: o.localWarm } : {}),
    ...learningOption(o.localWarmMaxMb, o.localWarmIdleMs, o.localCap ?? defaultCap),
  };
}
