// The server image (Dockerfile, built by docker/build-server-image.sh) run as a user would run it:
// non-root, data volume, HEALTHCHECK, the shipped units; a finqa tool call, and a coding rollout
// whose shell, file tools and unit_tests grade run in sandboxes made through the Docker engine's
// socket mounted into the container. And the boot refusal when no isolating sandbox works.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { containersUnavailable, docker, freePort, startContainer, type ServiceContainer } from '../helpers/containers.js';
import { describeIf } from '../helpers/require.js';
import { runLabelsEnv } from '../helpers/run-label.js';
import { repoRoot } from '../helpers/server.js';

const SERVER_IMAGE = 'rft-endpoints:latest';
const SANDBOX_IMAGE = 'rft-endpoints-sandbox:latest';
const SOCKET = '/var/run/docker.sock';
const unavailable = containersUnavailable(SERVER_IMAGE, SANDBOX_IMAGE);

const row = (id: string) =>
  readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((r) => r.task_id === id)!;

describeIf(unavailable === undefined, 'the server image', unavailable ?? '')('the server image', () => {
  const key = `image_${randomBytes(16).toString('hex')}`;
  let server: ServiceContainer;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = await startContainer(SERVER_IMAGE, {
      env: {
        HOST: '127.0.0.1',
        PORT: String(port),
        RFT_API_KEYS: `test:${key}`,
        RFT_SANDBOX: 'docker',
        RFT_DOCKER_IMAGE: SANDBOX_IMAGE,
        RFT_SANDBOX_CAP: '4',
        // Its own instance: never reap another server's sandboxes on this shared engine.
        RFT_DATA_DIR: `/data/${randomUUID()}`,
        RFT_LOG_LEVEL: 'warn',
        ...runLabelsEnv,
      },
      // The engine's socket, and its group so that the non-root server may use it (docs/deploy.md).
      binds: [`${SOCKET}:${SOCKET}`],
      groupAdd: [String(statSync(SOCKET).gid)],
      waitFor: /listening on http/,
      port,
    });
  }, 120_000);
  const traces: string[] = [];
  afterAll(async () => {
    await server?.[Symbol.asyncDispose]();
    // A server stopped by SIGTERM leaves none of its rollouts' sandbox containers behind.
    for (const trace of traces) expect((await docker(['ps', '-aq', '--filter', `label=rft-endpoints.trace_id=${trace}`])).stdout.trim()).toBe('');
  }, 60_000);

  async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  }

  async function call(traceId: string, item: unknown, name: string, args: unknown): Promise<string> {
    const callId = `call_${randomUUID().slice(0, 8)}`;
    const r = await post('/tools', { type: 'function_call', call_id: callId, name, arguments: JSON.stringify(args), trace_id: traceId, item });
    expect(r.status).toBe(200);
    return r.json.output as string;
  }

  it('answers /healthz, and its HEALTHCHECK passes, as a non-root user with /data as a volume', async () => {
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });
    const id = server.container.getId();
    const config = JSON.parse((await docker(['image', 'inspect', '-f', '{{json .Config}}', SERVER_IMAGE])).stdout) as {
      Volumes: object;
      User: string;
      Healthcheck: { Test: string[] };
    };
    expect(config.Healthcheck.Test[0]).toBe('CMD');
    // Exits 0 (execFile rejects otherwise).
    await docker(['exec', id, ...config.Healthcheck.Test.slice(1)]);
    expect((await docker(['exec', id, 'id', '-u'])).stdout.trim()).not.toBe('0');
    expect(Object.keys(config.Volumes)).toEqual(['/data']);
    expect(config.User).toBe('rft');
  });

  it('runs Node 24, the current LTS', async () => {
    const { stdout } = await docker(['exec', server.container.getId(), 'node', '-p', 'process.versions.node']);
    expect(stdout.trim().split('.')[0]).toBe('24');
  });

  it('answers a finqa tool call with the shipped units', async () => {
    const out = JSON.parse(await call(`trace_${randomUUID()}`, {}, 'search_docs', { query: 'Q3 revenue' })) as { results: { doc_id: string }[] };
    expect(out.results.length).toBeGreaterThan(0);
  });

  it('runs a coding rollout in sandboxes made through the engine socket, and grades it from inside the container', async () => {
    const traceId = `trace_${randomUUID()}`;
    traces.push(traceId);
    const item = row('roman');
    expect(await call(traceId, item, 'list_files', {})).toContain('roman.py');
    // A file written by the file tools is the file the shell sees: one workspace, in the sandbox container.
    expect(await call(traceId, item, 'write_file', { path: 'NOTE.txt', content: 'from write_file\n' })).toMatch(/NOTE\.txt/);
    const shell = await call(traceId, item, 'shell', { command: 'cat NOTE.txt; id -u; cat /proc/1/cgroup | head -1' });
    expect(shell).toMatch(/^exit_code: 0/);
    expect(shell).toContain('from write_file');
    const patch = readFileSync(join(repoRoot, 'examples/coding/tasks/roman/solution.patch'), 'utf8');
    expect(await call(traceId, item, 'apply_patch', { patch })).toBe('Success. Updated the following files:\nM roman.py');
    expect(await call(traceId, item, 'shell', { command: 'python3 -m unittest discover -s tests' })).toMatch(/^exit_code: 0/);
    const g = await post('/graders/unit_tests', { sample: { output_text: 'Fixed.', output_tools: [], choices: [] }, item, trace_id: traceId });
    expect(g).toEqual({ status: 200, json: { score: 1 } });
    // The sandbox is a container on the engine, labelled with this rollout.
    const { stdout } = await docker(['ps', '-q', '--filter', `label=rft-endpoints.trace_id=${traceId}`]);
    expect(stdout.trim()).not.toBe('');
  }, 180_000);

  it('runs bwrap sandboxes inside the container with the documented flags, as its non-root user', async () => {
    const port = await freePort();
    await using bwrap = await startContainer(SERVER_IMAGE, {
      env: { HOST: '127.0.0.1', PORT: String(port), RFT_API_KEYS: `test:${key}`, RFT_SANDBOX: 'bwrap', RFT_LOG_LEVEL: 'warn' },
      securityOpt: ['seccomp=unconfined', 'systempaths=unconfined', 'apparmor=unconfined'],
      waitFor: /listening on http/,
      port,
    });
    const traceId = `trace_${randomUUID()}`;
    const item = row('roman');
    const at = (path: string, body: unknown) =>
      fetch(`${bwrap.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
    const shell = async (command: string) =>
      ((await (await at('/tools', { type: 'function_call', call_id: `c_${randomUUID()}`, name: 'shell', arguments: JSON.stringify({ command }), trace_id: traceId, item })).json()) as { output: string }).output;
    expect(await shell('ls')).toMatch(/^exit_code: 0[\s\S]*roman\.py/);
    // Its own network namespace: no interface but lo, even though the server container has the host's.
    const net = await shell('tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "');
    expect(net.split('--- stdout ---\n')[1]?.trim()).toBe('lo');
  }, 120_000);

  it('refuses to boot on a public address without an isolating sandbox, naming RFT_SANDBOX=none', async () => {
    const { stdout, stderr } = await docker(['run', '--rm', '--network', 'none', '-e', `RFT_API_KEYS=test:${key}`, SERVER_IMAGE]).catch(
      (e: { stdout: string; stderr: string; code: number }) => {
        expect(e.code).not.toBe(0);
        return e;
      },
    );
    const out = stdout + stderr;
    expect(out).toContain('RFT_ERR_SANDBOX_PROCESS_DRIVER');
    expect(out).toContain('RFT_SANDBOX=none');
  }, 60_000);
});

