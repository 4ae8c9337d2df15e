// Picks a driver from the list (drivers/index.ts): `auto` takes the first in its order that is
// available on this machine.
import { errors, isRftError } from '../errors.js';
import type { DriverContext, DriverModule } from './driver-module.js';
import { DRIVERS, type DriverName } from './drivers/index.js';
import type { SandboxDriver } from './types.js';

export type { DriverName };

/** What select builds a driver with: the common context and any driver's own options (its keys of AppConfig.sandbox). */
export type DriverOptions = DriverContext & Record<string, unknown>;

/** The module of a driver by name; undefined for a name no driver has. */
export function driverModule(name: string): DriverModule | undefined {
  return (DRIVERS as readonly DriverModule[]).find((d) => d.name === name);
}

/** The named driver, checked to work on this machine; `auto` = the first of the list that does. */
export async function selectDriver(name: string, opts: DriverOptions): Promise<SandboxDriver> {
  const one = driverModule(name);
  if (name !== 'auto' && !one) throw errors.config(`no sandbox driver is named "${name}"`, { driver: name });
  const order: readonly DriverModule[] = one ? [one] : DRIVERS;
  for (const m of order) {
    const d = await m.create(opts);
    let ok;
    try {
      ok = await d.available();
    } catch (e) {
      // A misconfiguration it found (RFT_ERR_DOCKER_RUNTIME, RFT_ERR_DOCKER_SOCKET_DENIED) stops the
      // boot; under auto a socket closed to this user only says why Docker was passed over.
      await d.close?.();
      if (name === 'auto' && isRftError(e) && e.code === errors.dockerSocketDenied.code) {
        opts.log?.warn({ code: e.code }, `sandbox driver ${m.name} is not available: ${e.message}`);
        continue;
      }
      throw e;
    }
    if (ok) return d;
    await d.close?.();
  }
  throw errors.config(`sandbox driver "${name}" is not available on this machine (docs/sandbox.md; RFT_SANDBOX=none if no tool needs a sandbox)`, {
    driver: name,
  });
}
