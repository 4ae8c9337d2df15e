// Builds and starts the SandboxManager from the server's AppConfig (see docs/sandbox.md for the
// environment variables). Sandboxes carry their owner's id, by which a restarted server finds, and
// reaps, what its crashed predecessor left: with SQLite the id kept in the data dir (instance-id.ts,
// unique per data dir whatever its path); with Postgres, Docker sandboxes may outlive their creator
// for other replicas, so they carry the replica's id (RFT_INSTANCE_ID), which the store records as
// their owner and its liveness lock is named by (a data dir may be shared by replicas, or lost).
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { HarborTaskLookup } from '../harbor/types.js';
import { errors } from '../errors.js';
import { isLoopback } from '../loopback.js';
import { sandboxCap } from './capacity.js';
import { instanceIdFor } from './instance-id.js';
import { defaultLimits } from './workspace/limits.js';
import { SandboxManager, type SandboxManagerOptions } from './manager/manager.js';
import type { PlacementStore } from './placements.js';
import { driverModule, selectDriver } from './select.js';
import type { SandboxServerConfig } from './settings.js';
import type { PrestartSpec, SandboxObserver } from './types.js';

/** This package's root (src/sandbox/.. or dist/sandbox/..). */
const PACKAGE_ROOT = resolve(import.meta.dirname, '..', '..');

/** What other parts of the server need from every sandbox (the MCP bridge: its servers' install dirs). */
export interface SandboxExtras {
  readOnlyMounts?: string[];
  /** Processes pooled sandboxes start ahead for rollouts (the MCP bridge's rollout servers). */
  prestarts?: PrestartSpec[];
  /** Metrics and integrity flags. */
  observer?: SandboxObserver;
  /** Sandbox placements shared by replicas (the Postgres store's). */
  placements?: PlacementStore;
  /** Which process made each rollout's sandbox (the store): SandboxManagerOptions.history. */
  history?: SandboxManagerOptions['history'];
  /** The Harbor tasks a row's `sandbox.harbor` names (src/harbor/registry.ts; filled once the environments load). */
  harborTasks?: HarborTaskLookup;
}

export { instanceIdFor };

export async function createManagerFromConfig(config: SandboxServerConfig, log: Logger, extra: SandboxExtras = {}): Promise<SandboxManager> {
  const s = config.sandbox;
  if (s.driver === 'none') throw new Error('createManagerFromConfig called with RFT_SANDBOX=none');
  const instanceId = instanceIdFor(config.dataDir);
  // Not under the data dir: sandbox uids must be able to traverse every parent of their workspace.
  const sandboxesRoot = join(tmpdir(), 'rft-endpoints', instanceId);
  const owner = config.store.kind === 'postgres' ? config.instanceId : instanceId;
  const driver = await selectDriver(s.driver, {
    ...s,
    sandboxesRoot,
    instanceId,
    owner,
    // Never visible in a sandbox, wherever they are (a global install puts them under /usr): the
    // hidden tests, the database, the units, this package.
    hiddenPaths: [s.templatesRoot, config.dataDir, config.toolsDir, config.gradersDir, PACKAGE_ROOT],
    log: log.child({ component: 'sandbox' }),
  });
  const module = driverModule(driver.name);
  // A driver that isolates nothing must never serve remote callers.
  if (module && !module.isolates && !isLoopback(config.host)) {
    await driver.close?.();
    throw errors.processDriverNotAllowed(config.host);
  }
  if (module && !module.isolates) {
    log.warn(`sandbox driver "${driver.name}": commands run on the host with no isolation; use an isolating driver (bwrap, docker) for real training`);
  }
  const cap = sandboxCap(s.cap, driver.name);
  const manager = new SandboxManager({
    driver,
    limits: { ...defaultLimits, ...s.limits },
    cap,
    maxQueue: s.maxQueue,
    queueTimeoutMs: s.queueTimeoutMs,
    ...(s.memoryBudgetBytes !== undefined ? { memoryBudgetBytes: s.memoryBudgetBytes } : {}),
    ttlMs: s.ttlMs,
    graceMs: s.graceMs,
    instanceId: module?.shared ? owner : instanceId,
    templatesRoot: s.templatesRoot,
    harborNetwork: s.harborNetwork,
    log: log.child({ component: 'sandbox', driver: driver.name }),
    ...(extra.readOnlyMounts ? { readOnlyMounts: extra.readOnlyMounts } : {}),
    ...(extra.prestarts?.length ? { prestarts: extra.prestarts } : {}),
    ...(extra.observer ? { observer: extra.observer } : {}),
    ...(module?.shared && extra.placements ? { placements: extra.placements } : {}),
    ...(extra.history ? { history: extra.history } : {}),
    ...(extra.harborTasks ? { harborTasks: extra.harborTasks } : {}),
  });
  await manager.start();
  await module?.started?.(driver, { owner, placements: extra.placements, log: log.child({ component: 'sandbox' }) });
  log.info({ driver: driver.name, cap, memory_budget_mb: s.memoryBudgetBytes === undefined ? null : Math.round(s.memoryBudgetBytes / 1024 / 1024), sandboxes_root: sandboxesRoot }, 'sandboxes ready');
  return manager;
}
