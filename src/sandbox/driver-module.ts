// What a driver's folder declares (src/sandbox/drivers/<name>/index.ts), so that the rest of the
// server knows drivers only through the list in drivers/index.ts: the config builds RFT_SANDBOX and
// its settings from it, the default cap comes from it, `auto` tries drivers in its order, and the
// manager shares placements across replicas only for a driver that says it can be shared.
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { SandboxDriver } from './types.js';

/** What every driver is built with, besides its own settings. */
export interface DriverContext {
  /** Where host-bound drivers keep workdirs; must be searchable (o+x) all the way up. */
  sandboxesRoot: string;
  /** This server across restarts (instance-id.ts): a new process reaps what a crashed one left. */
  instanceId: string;
  /**
   * Owner of sandboxes any replica can reach (a shared driver's): the replica's id with Postgres
   * (RFT_INSTANCE_ID), `instanceId` otherwise.
   */
  owner?: string;
  /** Host directories no sandbox may see (the templates root, data dir, units, this package). */
  hiddenPaths?: string[];
  log?: Logger;
}

export interface DriverModule<N extends string = string, S extends z.ZodRawShape = z.ZodRawShape, O extends object = object> {
  /** RFT_SANDBOX=<name>, and Sandbox.driver of its sandboxes. */
  readonly name: N;
  /** Live sandboxes at most when RFT_SANDBOX_CAP is unset (sized from what an idle one costs). */
  readonly defaultCap: number;
  /** Its settings: fields of config.ts's schema (environment names), with their defaults. */
  readonly settings: S;
  /** Its keys of AppConfig.sandbox, from its parsed settings and RFT_SANDBOX_CAP. */
  options(settings: z.infer<z.ZodObject<S>>, cap: number | undefined): O;
  /**
   * Whether every replica can reach its sandboxes (SandboxDriver.attach/remove): then, with the
   * Postgres store, placements are shared and a rollout's sandbox is made once for all replicas.
   */
  readonly shared: boolean;
  /**
   * False for a driver that isolates nothing: development only, refused unless the server listens on
   * loopback (RFT_ERR_SANDBOX_PROCESS_DRIVER); the abuse suite skips what it cannot contain.
   */
  readonly isolates: boolean;
  /**
   * The driver (its code imported only now). Its availability check is SandboxDriver.available(),
   * which select.ts calls before using it; options absent from `opts` take the driver's own defaults.
   */
  create(opts: DriverContext & Partial<O>): Promise<SandboxDriver>;
  /** Runs once the manager has started (Docker: warns of another live server on its engines). */
  started?(driver: SandboxDriver, ctx: { owner: string; placements?: import('./placements.js').PlacementStore | undefined; log: Logger }): Promise<void>;
}

/** Declares a driver module with its literal name and option types kept (for DriverName and AppConfig.sandbox). */
export function defineDriver<N extends string, S extends z.ZodRawShape, O extends object>(m: DriverModule<N, S, O>): DriverModule<N, S, O> {
  return m;
}
