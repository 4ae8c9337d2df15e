// Real Postgres and Redis servers of a test's own, through testcontainers, from the images that
// docker/build-service-images.sh builds locally from Debian's packages (no registry is reachable).
// Containers use host networking on 127.0.0.1 (no bridge network exists on these machines), on a
// free port picked here. Each helper returns an AsyncDisposable: `await using pg = await startPostgres()`.
import { createServer } from 'node:net';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import type { StartedTestContainer } from 'testcontainers';

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

const docker = (...args: string[]) => execFileAsync('docker', args, { timeout: 60_000 });

function disposable(container: StartedTestContainer, port: number, url: string): ServiceContainer {
  const id = container.getId();
  return {
    url,
    port,
    container,
    kill: async () => void (await docker('kill', id)),
    // restart() on a stopped container starts it and waits on the container's wait strategy again.
    start: () => container.restart(),
    // Whatever state kill() left it in (testcontainers' own stop() is once only).
    [Symbol.asyncDispose]: async () => void (await docker('rm', '-f', '-v', id)),
  };
}

/** A fresh PostgreSQL 15 (user and password rft, database rft) on 127.0.0.1. */
export async function startPostgres(): Promise<ServiceContainer> {
  const port = await freePort();
  const container = await new GenericContainer(serviceImages.postgres)
    .withNetworkMode('host')
    .withEnvironment({ POSTGRES_USER: 'rft', POSTGRES_PASSWORD: 'rft', POSTGRES_DB: 'rft' })
    // Loopback only; fsync stays on: a test that kills this server relies on it.
    .withCommand(['postgres', '-p', String(port), '-c', 'listen_addresses=127.0.0.1'])
    .withLabels({ 'rft-endpoints.test': 'postgres' })
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/))
    .withStartupTimeout(60_000)
    .start();
  return disposable(container, port, `postgres://rft:rft@127.0.0.1:${port}/rft`);
}

/** A fresh Redis 7 on 127.0.0.1, nothing persisted. */
export async function startRedis(): Promise<ServiceContainer> {
  const port = await freePort();
  const container = await new GenericContainer(serviceImages.redis)
    .withNetworkMode('host')
    .withCommand(['redis-server', '--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'])
    .withLabels({ 'rft-endpoints.test': 'redis' })
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .withStartupTimeout(30_000)
    .start();
  return disposable(container, port, `redis://127.0.0.1:${port}`);
}
