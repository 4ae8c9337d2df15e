// Tests that need a driver (bubblewrap, Docker, Postgres, Chromium) skip with a message when it is
// absent; CI sets RFT_REQUIRE_DRIVERS=1 so a missing driver fails instead of silently skipping.
import { describe } from 'vitest';

export const requireDrivers = process.env.RFT_REQUIRE_DRIVERS === '1';

/** describe() when `available`, otherwise a skipped suite with a reason (or a failure under CI). */
export function describeIf(available: boolean, what: string, reason: string): typeof describe | typeof describe.skip {
  if (available) return describe;
  if (requireDrivers) {
    throw new Error(`RFT_REQUIRE_DRIVERS=1 but ${what} is not available: ${reason}`);
  }
  console.warn(`[skip] ${what}: ${reason}`);
  return describe.skip;
}
