// The sandbox section of the configuration (AppConfig.sandbox): the settings every driver shares,
// and each driver's own keys (its module's options(), drivers/<name>/index.ts) merged in.
import type { DRIVERS } from './drivers/index.js';
import type { SandboxLimits } from './types.js';

type Intersect<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** Every driver's keys of the section (Docker's engines, bwrap's warm workdirs, ...). */
export type DriverSettings = Intersect<ReturnType<(typeof DRIVERS)[number]['options']>>;

export type SandboxSettings = {
  /** RFT_SANDBOX: a driver's name, `auto` (the first available in the list's order) or `none`. */
  driver: string;
  /** Unset: the driver's default (its module's defaultCap). */
  cap: number | undefined;
  maxQueue: number;
  queueTimeoutMs: number;
  ttlMs: number;
  graceMs: number;
  templatesRoot: string;
  /** RFT_HARBOR_NETWORK: the Docker network a Harbor task asking for one joins; undefined: none. */
  harborNetwork?: string | undefined;
  limits: SandboxLimits;
  /** RFT_MEMORY_BUDGET_MB in bytes (manager/memory.ts); undefined: no budget. */
  memoryBudgetBytes: number | undefined;
} & DriverSettings;

/** What the sandbox manager is built from: the config's sandbox section and where the server's own files are. */
export interface SandboxServerConfig {
  sandbox: SandboxSettings;
  dataDir: string;
  toolsDir: string;
  gradersDir: string;
  /** Where the server listens (a driver that isolates nothing refuses any but loopback). */
  host: string;
  store: { kind: string };
  /** The replica's id (RFT_INSTANCE_ID), owner of shared sandboxes with Postgres. */
  instanceId: string;
}
