// Every sandbox driver, in `auto`'s order of preference (RFT_SANDBOX=auto takes the first that is
// available): bwrap (fast, kernel-enforced), then Docker, then the unisolated process driver.
// Adding a driver: its folder (drivers/<name>/index.ts declares it, see driver-module.ts) and one line
// here. Nothing else names drivers: import DRIVERS itself (a test adds a driver to it with vi.mock).
import { bwrap } from './bwrap/index.js';
import { docker } from './docker/index.js';
import { processDriver } from './process/index.js';

export const DRIVERS = [bwrap, docker, processDriver] as const;

export type DriverName = (typeof DRIVERS)[number]['name'];

