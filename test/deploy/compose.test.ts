// The compose stack (compose.yaml + deploy/Caddyfile) brought up for real: the server image, Postgres,
// Redis and the Caddy TLS front, from the images built locally (docker/build-*-image*.sh). This
// machine's Docker has no bridge network, so the test runs compose.yaml with host networking on
// 127.0.0.1: every service gets network_mode host and a free loopback port, the service names in the
// URLs become 127.0.0.1, and published ports go (host networking publishes nothing). Everything else
// is compose.yaml and the Caddyfile as users run them: images, env file, healthchecks, volumes.
// Then a tool call and a grade through HTTPS, verified against Caddy's own local CA.
import { randomBytes, randomUUID } from 'node:crypto';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { parse } from 'yaml';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { containersUnavailable, freePort, serviceImages } from '../helpers/containers.js';
import { runLabelsEnv } from '../helpers/run-label.js';
import { describeIf } from '../helpers/require.js';
import { repoRoot } from '../helpers/server.js';

const SERVER_IMAGE = 'rft-endpoints:latest';
const SOCKET = '/var/run/docker.sock';

/** `docker compose` (v2) where the plugin is installed, else Debian's `docker-compose`. */
function composeCommand(): string[] | undefined {
  for (const cmd of [['docker', 'compose'], ['docker-compose']]) {
    try {
      execFileSync(cmd[0]!, [...cmd.slice(1), 'version'], { stdio: 'ignore', timeout: 20_000 });
      return cmd;
    } catch {
      // try the next one
    }
  }
  return undefined;
}

const compose = composeCommand();
const unavailable =
  (compose ? undefined : 'neither `docker compose` nor `docker-compose` is installed (apt-get install docker-compose)') ??
  containersUnavailable(SERVER_IMAGE, serviceImages.postgres, serviceImages.redis, serviceImages.caddy);

type Service = Record<string, unknown> & { environment?: Record<string, string>; command?: string[]; volumes?: string[] };

/** compose.yaml with host networking on 127.0.0.1 (see the header), nothing else changed. */
function loopbackCompose(ports: { server: number; postgres: number; redis: number; https: number; http: number; admin: number }, envFile: string): string {
  const doc = parse(readFileSync(join(repoRoot, 'compose.yaml'), 'utf8')) as { services: Record<string, Service> };
  /** `host:port` in a URL (still holding compose's ${...} variables) becomes 127.0.0.1:port. */
  const at = (url: string, hostPort: string, port: number) => {
    if (!url.includes(`${hostPort}`)) throw new Error(`compose.yaml changed: ${url} does not name ${hostPort}`);
    return url.replace(hostPort, `127.0.0.1:${port}`);
  };
  for (const s of Object.values(doc.services)) {
    s.network_mode = 'host';
    delete s.ports;
    delete s.build;
    if (s.env_file) s.env_file = envFile;
    // Bind mounts of the repository's files (./deploy/Caddyfile) stay the repository's.
    if (s.volumes) s.volumes = s.volumes.map((v) => (v.startsWith('./') ? `${resolve(repoRoot, v.split(':')[0]!)}:${v.split(':').slice(1).join(':')}` : v));
  }
  const { server, postgres, redis, caddy } = doc.services as Record<'server' | 'postgres' | 'redis' | 'caddy', Service>;
  server.environment = {
    ...server.environment,
    HOST: '127.0.0.1',
    PORT: String(ports.server),
    RFT_DATABASE_URL: at(server.environment!.RFT_DATABASE_URL!, 'postgres:5432', ports.postgres),
    RFT_REDIS_URL: at(server.environment!.RFT_REDIS_URL!, 'redis:6379', ports.redis),
  };
  postgres.command = ['postgres', '-p', String(ports.postgres), '-c', 'listen_addresses=127.0.0.1'];
  postgres.healthcheck = { ...(postgres.healthcheck as object), test: ['CMD', 'pg_isready', '-h', '127.0.0.1', '-p', String(ports.postgres), '-U', 'rft', '-d', 'rft'] };
  redis.command = [...redis.command!, '--bind', '127.0.0.1', '--port', String(ports.redis)];
  redis.healthcheck = { ...(redis.healthcheck as object), test: ['CMD', 'redis-cli', '-p', String(ports.redis), 'ping'] };
  caddy.environment = {
    ...caddy.environment,
    CADDY_BIND: '127.0.0.1',
    CADDY_HTTPS_PORT: String(ports.https),
    CADDY_HTTP_PORT: String(ports.http),
    CADDY_ADMIN: `127.0.0.1:${ports.admin}`,
    RFT_UPSTREAM_HOST: '127.0.0.1',
    RFT_UPSTREAM_PORT: String(ports.server),
  };
  // JSON is YAML, and leaves no scalar to YAML 1.1 readers' guessing ("no" stays a string).
  return JSON.stringify(doc, null, 2);
}

describeIf(unavailable === undefined, 'the compose stack', unavailable ?? '')('the compose stack behind its TLS front', () => {
  const project = `rfttest${randomBytes(4).toString('hex')}`;
  const key = `compose_${randomBytes(16).toString('hex')}`;
  let dir: string;
  let ports: Parameters<typeof loopbackCompose>[0];
  let tls: Agent;
  const run = (args: string[], timeout = 180_000) =>
    promisify(execFile)(compose![0]!, [...compose!.slice(1), '-p', project, '--project-directory', dir, '-f', join(dir, 'compose.yaml'), ...args], {
      timeout,
      encoding: 'utf8',
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rft-compose-'));
    ports = { server: await freePort(), postgres: await freePort(), redis: await freePort(), https: await freePort(), http: await freePort(), admin: await freePort() };
    // .env as a user fills it in from .env.example (plus the local images: no registry here).
    const example = readFileSync(join(repoRoot, '.env.example'), 'utf8');
    const values: Record<string, string> = {
      RFT_DOMAIN: 'localhost',
      RFT_API_KEYS: `trainer:${key}`,
      POSTGRES_PASSWORD: randomBytes(12).toString('hex'),
      DOCKER_GID: String(statSync(SOCKET).gid),
      RFT_SANDBOX: 'docker',
    };
    let env = example.replace(/^([A-Z_]+)=.*$/gm, (line, name: string) => (name in values ? `${name}=${values[name]}` : line));
    for (const name of Object.keys(values)) expect(env).toMatch(new RegExp(`^${name}=`, 'm'));
    env += `RFT_IMAGE=${SERVER_IMAGE}\nPOSTGRES_IMAGE=${serviceImages.postgres}\nREDIS_IMAGE=${serviceImages.redis}\nCADDY_IMAGE=${serviceImages.caddy}\nRFT_LOG_LEVEL=warn\nRFT_DOCKER_LABELS=${runLabelsEnv.RFT_DOCKER_LABELS}\n`;
    writeFileSync(join(dir, '.env'), env);
    writeFileSync(join(dir, 'compose.yaml'), loopbackCompose(ports, join(dir, '.env')));
    await run(['up', '-d']);
    // Caddy's local CA signs the localhost certificate; the test trusts that root and nothing else.
    const root = await vi.waitFor(
      async () => {
        const { stdout } = await run(['exec', '-T', 'caddy', 'cat', '/data/caddy/pki/authorities/local/root.crt'], 20_000);
        if (!stdout.includes('BEGIN CERTIFICATE')) throw new Error('no root certificate yet');
        return stdout;
      },
      { timeout: 60_000, interval: 500 },
    );
    tls = new Agent({
      connect: {
        ca: root,
        servername: 'localhost',
        // localhost, at the one address Caddy listens on.
        lookup: (_host, _opts, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]),
      },
    });
    await vi.waitFor(async () => expect((await get('/healthz')).status).toBe(200), { timeout: 90_000, interval: 500 });
  }, 300_000);

  afterAll(async () => {
    if (existsSync(join(dir ?? '/nonexistent', 'compose.yaml')) && process.env.RFT_TEST_KEEP_COMPOSE !== '1') {
      await run(['down', '-v', '--remove-orphans', '-t', '5']).catch((e: Error) => console.warn(`compose down: ${e.message}`));
      rmSync(dir, { recursive: true, force: true });
    }
    await tls?.close();
  }, 120_000);

  const base = () => `https://localhost:${ports.https}`;
  async function get(path: string) {
    const res = await request(`${base()}${path}`, { dispatcher: tls, headers: { authorization: `Bearer ${key}` } });
    return { status: res.statusCode, headers: res.headers, json: (await res.body.json()) as Record<string, unknown> };
  }
  async function post(path: string, body: unknown) {
    const res = await request(`${base()}${path}`, {
      method: 'POST',
      dispatcher: tls,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
  }

  it('answers a tool call and a grade over HTTPS, recorded in Postgres and rate-counted in Redis', async () => {
    const row = JSON.parse(readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').split('\n')[0]!) as Record<string, unknown>;
    const traceId = `trace_${randomUUID()}`;
    const call = await post('/tools', {
      type: 'function_call',
      call_id: 'call_1',
      name: 'search_docs',
      arguments: JSON.stringify({ query: 'revenue' }),
      trace_id: traceId,
      item: row,
    });
    expect(call.status).toBe(200);
    expect((JSON.parse(call.json.output as string) as { results: unknown[] }).results.length).toBeGreaterThan(0);

    const answer = `Answer: ${String(row.reference_answer)}`;
    const grade = await post('/graders/answer_match', { sample: { output_text: answer, output_tools: [], choices: [] }, item: row, trace_id: traceId });
    expect(grade.status).toBe(200);
    expect(grade.json.score).toBeGreaterThan(0.9);

    // The rollout's record, read back through the front, lives in Postgres...
    const record = await get(`/v1/rollouts/${traceId}`);
    expect(record.status).toBe(200);
    const sql = `SELECT (SELECT count(*) FROM rft.calls WHERE trace_id = '${traceId}') || ' ' || (SELECT count(*) FROM rft.grades WHERE trace_id = '${traceId}')`;
    const { stdout: rows } = await run(['exec', '-T', 'postgres', 'psql', '-p', String(ports.postgres), '-U', 'rft', '-d', 'rft', '-tAc', sql], 30_000);
    expect(rows.trim()).toBe('1 1');
    // ...and the trainer's requests are counted in Redis, shared by every replica.
    const { stdout: keys } = await run(['exec', '-T', 'redis', 'redis-cli', '-p', String(ports.redis), '--scan', '--pattern', 'rft-endpoints:rate-limit:*'], 30_000);
    expect(keys).toContain('trainer');
  }, 120_000);

  it('serves HTTPS only with a certificate from the local CA, and reports the server ready', async () => {
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json.store).toBe('writable');
    // Without Caddy's root the certificate is refused: it is a real TLS front, not a pass-through.
    await expect(request(`${base()}/healthz`, { dispatcher: new Agent({ connect: { lookup: (_h, _o, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]) } }) })).rejects.toThrow(
      /certificate/i,
    );
  });
});
