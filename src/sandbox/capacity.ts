// The default cap on live sandboxes (RFT_SANDBOX_CAP unset), per driver: each driver's module
// declares it (drivers/<name>/index.ts), sized from what an idle sandbox costs the host
// (bench/idle-cost.ts; figures and command lines in bench/README.md).
//
// A training step starts hundreds of rollouts at once (the published Agent RFT runs: up to 500),
// and the previous step's sandboxes are still there for their grace period (RFT_SANDBOX_GRACE_MS)
// when it does; at the cap, those graded sandboxes are reclaimed first (manager/manager.ts), but
// rollouts the trainer dropped without a grade hold their slots until the inactivity TTL. So the
// default leaves room for two full steps, where the cost allows it.
import { errors } from '../errors.js';
import { DRIVERS, type DriverName } from './drivers/index.js';

export const DEFAULT_SANDBOX_CAP = Object.fromEntries(DRIVERS.map((d) => [d.name, d.defaultCap])) as Record<DriverName, number>;

/** The configured cap, or the driver's default. */
export function sandboxCap(configured: number | undefined, driver: string): number {
  const byDefault = (DEFAULT_SANDBOX_CAP as Record<string, number | undefined>)[driver];
  if (configured === undefined && byDefault === undefined) throw errors.config(`no sandbox driver is named "${driver}"`, { driver });
  return configured ?? (byDefault as number);
}
