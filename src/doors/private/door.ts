// What a door on the private listener is and may use (./doors.ts lists them).
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { DoorCore } from '../core.js';
import type { AppConfig } from '../../config.js';
import type { Environments } from '../../environments/environment.js';
import type { Registry } from '../../registry/loader.js';
import type { Ledger } from '../../ledger/ledger.js';
import type { GradingService } from '../../grading-service/service.js';
import type { SandboxProvider } from '../../sandbox/provider.js';
import type { Store } from '../../store/types.js';

/** What a private door may use: the core first; the parts below it for what the core does not say (a sandbox of its own). */
export interface PrivateDoorContext {
  core: DoorCore;
  config: AppConfig;
  environments: Environments;
  registry: Registry;
  ledger: Ledger;
  grading: GradingService;
  store: Store;
  /** Undefined when no sandbox driver is configured. */
  sandboxes: SandboxProvider | undefined;
  log: Logger;
}

export interface PrivateDoor {
  /** Its name in the record's door column and the logs. */
  name: string;
  /**
   * The first path segments its routes take (e.g. `reward` for /reward/{grader}): an environment of the
   * same name would be shadowed by them (or shadow them, for doors with /{env}/... routes), so boot refuses it.
   */
  segments: readonly string[];
  register(app: FastifyInstance, ctx: PrivateDoorContext): Promise<void> | void;
}
