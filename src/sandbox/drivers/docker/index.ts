// The Docker driver as the driver list knows it (src/sandbox/drivers/index.ts): its settings (the
// engines, image, runtime, warm containers, labels) and how the server builds it.
import { z } from 'zod';
import { defineDriver } from '../../driver-module.js';
import { parseDockerHosts, type DockerHostSpec } from './hosts.js';
import { learningOption, learnSettings } from '../../pool/settings.js';

const DEFAULT_IMAGE = 'rft-endpoints-sandbox:latest';
// Measured, 30 idle containers on one engine (bench/idle-cost.ts, bench/README.md): 3 processes
// (containerd-shim, docker-init, sleep), 3.4 MB of their PSS, 0.7 MB of dockerd and containerd
// growth, 0.9 MB of kernel memory: about 5 MB (8.5 MB by the host's available memory, page cache
// included), and every one is created by the engine at about 170 ms. 512 of them: about 2.5-4.3 GB
// on the engine's host. The cap applies per replica, and per engine unless RFT_DOCKER_HOSTS gives one (?cap=).
const DEFAULT_CAP = 512;

const settings = {
  RFT_DOCKER_IMAGE: z.string().default(DEFAULT_IMAGE),
  /** One local engine (the default when RFT_DOCKER_HOSTS and DOCKER_HOST are unset: /var/run/docker.sock). */
  RFT_DOCKER_SOCKET: z.string().optional(),
  /** Engines to place sandboxes on: unix:///path or tcp://host:port, each with ?cap=&name=&cert_path=&tls_verify= (docs/deploy.md). */
  RFT_DOCKER_HOSTS: z.string().optional(),
  /** Docker's own conventions, used when RFT_DOCKER_HOSTS is unset (DOCKER_HOST) and for TLS to tcp:// engines. */
  DOCKER_HOST: z.string().optional(),
  DOCKER_TLS_VERIFY: z.string().optional(),
  DOCKER_TLS: z.string().optional(),
  DOCKER_CERT_PATH: z.string().optional(),
  /** OCI runtime the engines know by this name, e.g. runsc (gVisor); the engine's default otherwise. */
  RFT_DOCKER_RUNTIME: z.string().regex(/^[\w.-]{1,64}$/, 'a runtime name as registered with the engine').optional(),
  /**
   * Started, empty containers kept ready per engine for new rollouts whatever the arrivals: the warm
   * pool's floor (0: none). Beyond it the pool learns the training step (RFT_SANDBOX_WARM_MAX_MB, at
   * 8.5 MB per idle container, and RFT_SANDBOX_WARM_IDLE_MS, shared with bwrap).
   */
  RFT_DOCKER_WARM: z.coerce.number().int().min(0).max(1000).default(0),
  /**
   * Every call of a rollout over one agent in its container (agent/README.md): the engine creates,
   * starts and removes, and runs no exec per call. false: one engine exec per call, as before.
   */
  RFT_DOCKER_AGENT: z
    .enum(['1', '0', 'true', 'false', 'yes', 'no'])
    .default('true')
    .transform((v) => v === '1' || v === 'true' || v === 'yes'),
  ...learnSettings,
  /** Labels put on every container and volume this server creates, `key=value,...` (e.g. a deployment's or a test run's name, to find them with docker ps --filter). */
  RFT_DOCKER_LABELS: z
    .string()
    .regex(/^([a-z0-9][a-z0-9._-]{0,127}=[^,=\s]{0,128})(,[a-z0-9][a-z0-9._-]{0,127}=[^,=\s]{0,128})*$/, 'key=value pairs separated by commas (keys: lower-case letters, digits, dots, dashes)')
    .optional(),
};

export interface DockerOptions {
  dockerImage: string;
  dockerHosts: DockerHostSpec[];
  dockerRuntime: string | undefined;
  dockerWarm: number;
  /** RFT_DOCKER_AGENT. */
  dockerAgent: boolean;
  /** The learned pool's memory budget, MB (RFT_SANDBOX_WARM_MAX_MB; 0: no learning), and when it shrinks back. */
  dockerWarmMaxMb: number;
  dockerWarmIdleMs: number;
  /** RFT_DOCKER_LABELS. */
  dockerLabels: Record<string, string>;
}

export const docker = defineDriver({
  name: 'docker',
  defaultCap: DEFAULT_CAP,
  settings,
  options: (s, cap): DockerOptions => ({
    dockerImage: s.RFT_DOCKER_IMAGE,
    dockerHosts: parseDockerHosts({
      hosts: s.RFT_DOCKER_HOSTS,
      socket: s.RFT_DOCKER_SOCKET,
      dockerHost: s.DOCKER_HOST,
      tlsVerify: s.DOCKER_TLS_VERIFY,
      tls: s.DOCKER_TLS,
      certPath: s.DOCKER_CERT_PATH,
      cap: cap ?? DEFAULT_CAP,
    }),
    dockerRuntime: s.RFT_DOCKER_RUNTIME,
    dockerWarm: s.RFT_DOCKER_WARM,
    dockerAgent: s.RFT_DOCKER_AGENT,
    dockerWarmMaxMb: s.RFT_SANDBOX_WARM_MAX_MB,
    dockerWarmIdleMs: s.RFT_SANDBOX_WARM_IDLE_MS,
    dockerLabels: Object.fromEntries((s.RFT_DOCKER_LABELS ?? '').split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string])),
  }),
  shared: true,
  isolates: true,
  async create(opts) {
    const { DockerDriver } = await import('./driver.js');
    return new DockerDriver({
      instanceId: opts.owner ?? opts.instanceId,
      image: opts.dockerImage ?? DEFAULT_IMAGE,
      ...(opts.dockerHosts ? { hosts: opts.dockerHosts } : {}),
      ...(opts.dockerRuntime ? { runtime: opts.dockerRuntime } : {}),
      ...(opts.dockerWarm !== undefined ? { warmPool: opts.dockerWarm } : {}),
      ...(opts.dockerAgent === false ? { agent: false } : {}),
      // learning within the engines' caps (each engine's, summed) and the memory budget
      ...learningOption(opts.dockerWarmMaxMb, opts.dockerWarmIdleMs, (opts.dockerHosts ?? []).reduce((n, h) => n + h.cap, 0) || DEFAULT_CAP),
      ...(opts.dockerLabels ? { labels: opts.dockerLabels } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
  },
  async started(driver, ctx) {
    const { warnOfNeighbours } = await import('./neighbours.js');
    await warnOfNeighbours(driver as import('./driver.js').DockerDriver, ctx.owner, ctx.placements, ctx.log);
  },
});
