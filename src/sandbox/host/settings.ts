// The setting the host-bound drivers (bwrap, process) share: workdirs kept built ahead (workdir-pool.ts).
import { z } from 'zod';

export const localSettings = {
  /**
   * bwrap (and process) sandboxes kept built ahead for new rollouts, refilled in the background: a
   * burst takes this many without building one (an idle one costs about 0.75 MB and 2 processes).
   */
  RFT_SANDBOX_WARM: z.coerce.number().int().min(0).max(10_000).default(2),
};

export interface LocalOptions {
  /** Prepared bwrap/process sandboxes (RFT_SANDBOX_WARM). */
  localWarm: number;
}

export function localOptions(s: { RFT_SANDBOX_WARM: number }): LocalOptions {
  return { localWarm: s.RFT_SANDBOX_WARM };
}
