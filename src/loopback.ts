// A leaf every layer may import (as errors.ts): config.ts (the NeMo Gym door's listener) and the
// process sandbox driver both ask it.
import { isIPv4 } from 'node:net';

/** The one loopback check: where listening without a credential, or with the unisolated process driver, is allowed. */
export function isLoopback(host: string): boolean {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (h === 'localhost' || h === '::1') return true;
  return isIPv4(h) && h.startsWith('127.');
}
