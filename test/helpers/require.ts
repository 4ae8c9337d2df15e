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

/**
 * describe() when a trainer's checkout is named (RFT_TEST_*_SRC), otherwise a skipped suite with a reason,
 * under CI too: the real clients run from repositories fetched by whoever refreshes the recordings
 * (test/fixtures/README.md), which CI does not have; CI replays those recordings byte for byte instead.
 */
export function describeWithCheckout(available: boolean, what: string, reason: string): typeof describe | typeof describe.skip {
  if (available) return describe;
  console.warn(`[skip] ${what} (live run; its recording is replayed): ${reason}`);
  return describe.skip;
}
