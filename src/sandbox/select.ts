// Picks a driver: `auto` prefers bwrap (fast, kernel-enforced), then Docker, then the unisolated
// process driver.
import type { Logger } from 'pino';
import { errors, isRftError } from '../errors.js';
import type { DockerHostSpec } from './drivers/docker/hosts.js';
import { BwrapDriver } from './drivers/bwrap/driver.js';
import { ProcessDriver } from './drivers/process/driver.js';
import type { SandboxDriver } from './types.js';

export type DriverName = 'auto' | 'bwrap' | 'docker' | 'process';

export interface DriverOptions {
  sandboxesRoot: string;
  instanceId: string;
  dockerImage?: string;
  /** Docker engines (RFT_DOCKER_HOSTS); without them, the local socket. */
  dockerHosts?: DockerHostSpec[];
  dockerRuntime?: string;
  /** Owner label of Docker containers (default: instanceId). */
  dockerOwner?: string;
  /** Started containers kept ready per Docker engine. */
  dockerWarm?: number;
  /** Extra labels of every Docker container and volume (RFT_DOCKER_LABELS). */
  dockerLabels?: Record<string, string>;
  log?: Logger;
  /** Workdirs kept prepared for new rollouts (see WorkdirPool). */
  warmPool?: number;
  /** Host directories no sandbox may see (LocalDriverOptions.hiddenPaths). */
  hiddenPaths?: string[];
}

async function dockerDriver(opts: DriverOptions): Promise<SandboxDriver> {
  const { DockerDriver } = await import('./drivers/docker/driver.js');
  return new DockerDriver({
    instanceId: opts.dockerOwner ?? opts.instanceId,
    image: opts.dockerImage ?? 'rft-endpoints-sandbox:latest',
    ...(opts.dockerHosts ? { hosts: opts.dockerHosts } : {}),
    ...(opts.dockerRuntime ? { runtime: opts.dockerRuntime } : {}),
    ...(opts.dockerWarm !== undefined ? { warmPool: opts.dockerWarm } : {}),
    ...(opts.dockerLabels ? { labels: opts.dockerLabels } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
}

async function build(name: Exclude<DriverName, 'auto'>, opts: DriverOptions): Promise<SandboxDriver> {
  if (name === 'bwrap') {
    const log = opts.log;
    return new BwrapDriver({ ...opts, ...(log ? { log, onUnavailable: (why: string) => log.warn({ why }, 'sandbox driver bwrap is not available') } : {}) });
  }
  if (name === 'process') return new ProcessDriver(opts);
  return dockerDriver(opts);
}

/** The named driver, checked to work on this machine; `auto` = the first of bwrap, docker, process that does. */
export async function selectDriver(name: DriverName, opts: DriverOptions): Promise<SandboxDriver> {
  const order: Exclude<DriverName, 'auto'>[] = name === 'auto' ? ['bwrap', 'docker', 'process'] : [name];
  for (const n of order) {
    const d = await build(n, opts);
    let ok;
    try {
      ok = await d.available();
    } catch (e) {
      // A misconfiguration it found (RFT_ERR_DOCKER_RUNTIME, RFT_ERR_DOCKER_SOCKET_DENIED) stops the
      // boot; under auto a socket closed to this user only says why Docker was passed over.
      await d.close?.();
      if (name === 'auto' && isRftError(e) && e.code === errors.dockerSocketDenied.code) {
        opts.log?.warn({ code: e.code }, `sandbox driver docker is not available: ${e.message}`);
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
