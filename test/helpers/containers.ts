// Real Postgres and Redis servers of a test's own, through testcontainers, from the images that
// docker/build-service-images.sh builds locally from Debian's packages (no registry is reachable).
// Containers use host networking on 127.0.0.1 (no bridge network exists on these machines), on a
// free port picked here. Each helper returns an AsyncDisposable: `await using pg = await startPostgres()`.
import { connect, createServer } from 'node:net';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import type { StartedTestContainer } from 'testcontainers';
import { runLabels } from './run-label.js';
import { waitFor } from './wait.js';

// No Ryuk (its image comes from a registry): every container is removed by its own dispose.
process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';
const { GenericContainer, Wait } = await import('testcontainers');
const execFileAsync = promisify(execFile);

export const serviceImages = {
  postgres: 'rft-endpoints-postgres:local',
  redis: 'rft-endpoints-redis:local',
  caddy: 'rft-endpoints-caddy:local',
} as const;

/** Why the service images cannot be used (for describeIf), or undefined when they can. */
export function containersUnavailable(...images: string[]): string | undefined {
  for (const image of images) {
    try {
      execFileSync('docker', ['image', 'inspect', image], { stdio: 'ignore', timeout: 20_000 });
    } catch {
      return `docker image ${image} is missing (run docker/build-service-images.sh)`;
    }
  }
  return undefined;
}

/** A port free on 127.0.0.1 right now (host networking: the container binds it itself). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (!addr || typeof addr !== 'object') throw new Error('no port');
  return addr.port;
}

export interface ServiceContainer extends AsyncDisposable {
  url: string;
  port: number;
  container: StartedTestContainer;
  /** Kills the server (SIGKILL: a crash, not a clean shutdown); the container and its data stay. */
  kill(): Promise<void>;
  /** Starts it again after kill() and waits until it accepts connections. */
  start(): Promise<void>;
}

/** The docker CLI; rejects (with stdout, stderr and code) when it exits non-zero. */
export const docker = (args: string[], timeout = 60_000): Promise<{ stdout: string; stderr: string }> =>
  execFileAsync('docker', args, { timeout, encoding: 'utf8' });

/** Whether 127.0.0.1:port accepts a TCP connection now (true), or not yet (undefined: waitFor polls on). */
const listening = (port: number): Promise<true | undefined> =>
  new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port }, () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(undefined));
  });

function disposable(container: StartedTestContainer, port: number, url: string): ServiceContainer {
  const id = container.getId();
  return {
    url,
    port,
    container,
    kill: async () => void (await docker(['kill', id])),
    // Started by hand and awaited on its port: testcontainers' restart() waits for the ready log
    // line again, which can miss it (its `since` is floored to the second) and hang the test (a full
    // run once timed out there; testcontainers-node #446, #488).
    start: async () => {
      await docker(['start', id]);
      await waitFor(`127.0.0.1:${port} to accept connections`, () => listening(port), 60_000, 100);
    },
    // A clean stop first (SIGTERM: a server removes its sandboxes), then whatever state kill() left
    // it in (testcontainers' own stop() is once only).
    [Symbol.asyncDispose]: async () => {
      await docker(['stop', '-t', '30', id]).catch(() => undefined);
      await docker(['rm', '-f', '-v', id]);
    },
  };
}

export interface ContainerOptions {
  env?: Record<string, string>;
  command?: string[];
  binds?: string[];
  /** Supplementary groups (docker run --group-add). */
  groupAdd?: string[];
  /** docker run --security-opt values. */
  securityOpt?: string[];
  /** A log line that says the service is ready. */
  waitFor: RegExp;
  /** The port it listens on, on 127.0.0.1 (host networking). */
  port: number;
  url?: string;
}

/** A local image run on host networking, removed (with its volumes) by its dispose. */
export async function startContainer(image: string, o: ContainerOptions): Promise<ServiceContainer> {
  class Container extends GenericContainer {
    constructor() {
      super(image);
      if (o.groupAdd) this.hostConfig.GroupAdd = o.groupAdd;
      if (o.binds) this.hostConfig.Binds = o.binds;
      if (o.securityOpt) {
        // The CLI's systempaths=unconfined is no security option in the Engine API: it empties the masked and read-only /proc paths.
        this.hostConfig.SecurityOpt = o.securityOpt.filter((x) => x !== 'systempaths=unconfined');
        if (o.securityOpt.includes('systempaths=unconfined')) Object.assign(this.hostConfig, { MaskedPaths: [], ReadonlyPaths: [] });
      }
    }
  }
  let c = new Container()
    .withNetworkMode('host')
    .withEnvironment(o.env ?? {})
    .withLabels({ 'rft-endpoints.test': image, ...runLabels })
    .withWaitStrategy(Wait.forLogMessage(o.waitFor))
    .withStartupTimeout(90_000);
  if (o.command) c = c.withCommand(o.command);
  return disposable(await c.start(), o.port, o.url ?? `http://127.0.0.1:${o.port}`);
}

/** A fresh PostgreSQL 15 (user and password rft, database rft) on 127.0.0.1. */
export async function startPostgres(): Promise<ServiceContainer> {
  const port = await freePort();
  return startContainer(serviceImages.postgres, {
    env: { POSTGRES_USER: 'rft', POSTGRES_PASSWORD: 'rft', POSTGRES_DB: 'rft' },
    // Loopback only; fsync stays on: a test that kills this server relies on it.
    command: ['postgres', '-p', String(port), '-c', 'listen_addresses=127.0.0.1'],
    waitFor: /database system is ready to accept connections/,
    port,
    url: `postgres://rft:rft@127.0.0.1:${port}/rft`,
  });
}

/** A fresh Redis 7 on 127.0.0.1, nothing persisted. */
export async function startRedis(): Promise<ServiceContainer> {
  const port = await freePort();
  return startContainer(serviceImages.redis, {
    command: ['redis-server', '--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'],
    waitFor: /Ready to accept connections/,
    port,
    url: `redis://127.0.0.1:${port}`,
  });
}
