// Several Docker engines (the two of .ci/setup-engines.sh: a unix socket, and a TLS tcp:// address
// with client certificates): placement by free room under per-engine caps, reaping per owner on
// every engine, and an engine that stops answering (its dockerd SIGSTOPped) taken out of placement
// with its sandboxes' calls answering RFT_ERR_SANDBOX_ENGINE_DOWN instead of hanging.
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DockerApi } from '../../../../src/sandbox/drivers/docker/api.js';
import { DockerDriver } from '../../../../src/sandbox/drivers/docker/driver.js';
import { endpointFor, parseDockerHosts, type DockerHostSpec } from '../../../../src/sandbox/drivers/docker/hosts.js';
import type { DockerSandbox } from '../../../../src/sandbox/drivers/docker/sandbox.js';
import type { Sandbox } from '../../../../src/sandbox/types.js';
import { describeIf } from '../../../helpers/require.js';
import { DOCKER_IMAGE, spec } from '../../helpers.js';
import { runLabels } from '../../../helpers/run-label.js';

const ENGINE_1 = '/run/rft-engines/1.sock';
const PIDFILE_1 = '/run/rft-engines/1.pid';
const TLS_CERTS = '/etc/rft-engines/tls/client';
const HOSTS = `unix://${ENGINE_1}?name=e1&cap=3,tcp://127.0.0.1:21376?name=e2&cap=3&cert_path=${TLS_CERTS}&tls_verify=1`;

async function enginesUp(): Promise<string | undefined> {
  if (!existsSync(ENGINE_1) || !existsSync(TLS_CERTS)) return 'the extra engines are not running (run .ci/setup-engines.sh)';
  for (const h of parseDockerHosts({ cap: 1, hosts: HOSTS })) {
    const api = new DockerApi(endpointFor(h));
    try {
      const img = await api.call('GET', `/images/${encodeURIComponent(DOCKER_IMAGE)}/json`, undefined, { ok: [404], timeoutMs: 5_000 });
      if (img.status !== 200) return `engine ${h.name} has no ${DOCKER_IMAGE}`;
    } catch (e) {
      return `engine ${h.name}: ${(e as Error).message}`;
    } finally {
      await api.close();
    }
  }
  return undefined;
}

const missing = await enginesUp();

/** Names of this owner's containers on an engine. */
async function containersOn(spec: DockerHostSpec, owner: string): Promise<string[]> {
  const api = new DockerApi(endpointFor(spec));
  try {
    const filters = encodeURIComponent(JSON.stringify({ label: [`rft-endpoints.instance=${owner}`] }));
    const list = await api.call<{ Names: string[] }[]>('GET', `/containers/json?all=true&filters=${filters}`);
    return list.body.map((c) => (c.Names[0] ?? '').replace(/^\//, '')).sort();
  } finally {
    await api.close();
  }
}

const engineOf = (sb: Sandbox): string => (sb as DockerSandbox).ref.engine;

describeIf(missing === undefined, 'two extra Docker engines', missing ?? '')('several Docker engines', () => {
  const owner = `engines-${process.pid}`;
  const hosts = parseDockerHosts({ cap: 1, hosts: HOSTS });
  let driver: DockerDriver;
  const made: Sandbox[] = [];
  beforeAll(async () => {
    // The exec path (one engine call per sandbox call): what an engine that stops answering does to
    // calls. Over the agent (the default) a live container's calls do not go through its engine at all.
    driver = new DockerDriver({ labels: runLabels, instanceId: owner, image: DOCKER_IMAGE, hosts, agent: false });
    expect(await driver.available()).toBe(true);
  });
  afterAll(async () => {
    // Never leave engine 1 stopped for the suites after this one, whatever a test left undone.
    if (existsSync(PIDFILE_1)) process.kill(Number(readFileSync(PIDFILE_1, 'utf8')), 'SIGCONT');
    await Promise.allSettled(made.map((s) => s.destroy()));
    await driver?.close();
  });

  it('spreads new sandboxes over the engines by free room, over TLS too, and refuses past every cap with a 503', async () => {
    for (let i = 0; i < 6; i++) made.push(await driver.create(spec(`trace_spread_${i}`, { files: { 'n.txt': String(i) } })));
    const counts = made.reduce<Record<string, number>>((m, sb) => ({ ...m, [engineOf(sb)]: (m[engineOf(sb)] ?? 0) + 1 }), {});
    expect(counts).toEqual({ e1: 3, e2: 3 });
    for (const sb of made) expect((await sb.exec('cat n.txt')).stdout).toBe(sb.traceId.split('_').pop());
    await expect(driver.create(spec('trace_full'))).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_UNAVAILABLE', statusCode: 503 });
    await made.pop()!.destroy();
    made.push(await driver.create(spec('trace_room')));
  });

  it('reaps only its own containers on every engine, keeping those it is told are in use elsewhere', async () => {
    const other = new DockerDriver({ labels: runLabels, instanceId: `${owner}-other`, image: DOCKER_IMAGE, hosts });
    const theirs = await other.create(spec('trace_theirs'));
    const crashed = new DockerDriver({ labels: runLabels, instanceId: owner, image: DOCKER_IMAGE, hosts });
    const left = [await crashed.create(spec('trace_left_a')), await crashed.create(spec('trace_left_b'))] as DockerSandbox[];
    // A new process of the same owner: the left containers are orphans, but one is recorded as placed.
    const restarted = new DockerDriver({ labels: runLabels, instanceId: owner, image: DOCKER_IMAGE, hosts });
    try {
      expect(await restarted.reapOrphans(new Set([left[0]!.container, ...made.map((s) => (s as DockerSandbox).container)]))).toBe(1);
      const mine = [...(await containersOn(hosts[0]!, owner)), ...(await containersOn(hosts[1]!, owner))];
      expect(mine).toContain(left[0]!.container);
      expect(mine).not.toContain(left[1]!.container);
      expect((await theirs.exec('echo still')).stdout).toBe('still\n');
    } finally {
      await left[0]!.destroy();
      await theirs.destroy();
      await Promise.all([other.close(), crashed.close(), restarted.close()]);
    }
  });

  it('takes an engine that stops answering out of placement; its sandboxes answer ENGINE_DOWN, not a hang, until it is back', { timeout: 120_000 }, async () => {
    const pid = Number(readFileSync(PIDFILE_1, 'utf8'));
    const onE1 = made.find((sb) => engineOf(sb) === 'e1')!;
    const onE2 = made.find((sb) => engineOf(sb) === 'e2')!;
    process.kill(pid, 'SIGSTOP');
    // Each step has its own deadline, well inside the test's: the engine is resumed in `finally`
    // whatever hangs (a full run once timed out inside, leaving the engine stopped for every later
    // test), and the failure names the step.
    const step = <T,>(label: string, ms: number, p: Promise<T>): Promise<T> => {
      let timer: NodeJS.Timeout | undefined;
      return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${label}: no answer in ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
    };
    try {
      const t = Date.now();
      await expect(step('exec on the stopped engine', 30_000, onE1.exec('echo hi'))).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN', statusCode: 503 });
      expect(Date.now() - t).toBeLessThan(30_000);
      // Marked down: the next call fails at once, new sandboxes go to the other engine, which still works.
      const t2 = Date.now();
      await expect(step('read on the engine marked down', 10_000, onE1.readFile('n.txt'))).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN' });
      expect(Date.now() - t2).toBeLessThan(3_000); // no request: a loaded machine's stall, not the engine's 5-s connect or 15-s request timeout
      await step('destroy on the other engine', 20_000, made.find((sb) => engineOf(sb) === 'e2' && sb !== onE2)!.destroy());
      const fresh = await step('create while one engine is down', 20_000, driver.create(spec('trace_while_down')));
      made.push(fresh);
      expect(engineOf(fresh)).toBe('e2');
      expect((await step('exec on the other engine', 20_000, onE2.exec('echo fine'))).stdout).toBe('fine\n');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // Back in placement after its probe answers.
    for (let i = 0; ; i++) {
      const r = await onE1.exec('cat n.txt').catch((e: { code?: string }) => String(e.code));
      if (typeof r !== 'string') {
        expect(r.exitCode).toBe(0);
        break;
      }
      expect(r).toBe('RFT_ERR_SANDBOX_ENGINE_DOWN');
      if (i > 100) throw new Error('engine 1 never came back into placement');
      await new Promise((res) => setTimeout(res, 200));
    }
  });
});

describeIf(missing === undefined, 'two extra Docker engines', missing ?? '')('container starts per engine', () => {
  it('creates at most `starts` containers at once on an engine, the rest in turn', { timeout: 120_000 }, async () => {
    const owner = `starts-${process.pid}`;
    const driver = new DockerDriver({ labels: runLabels, instanceId: owner, image: DOCKER_IMAGE, hosts: parseDockerHosts({ cap: 10, hosts: `unix://${ENGINE_1}?name=e1&starts=2` }) });
    expect(await driver.available()).toBe(true);
    // Every request the driver sends the engine goes through its API client: count those in flight
    // that create or start a container.
    const api = driver.engines[0]!.api;
    const send = api.call.bind(api);
    let inFlight = 0;
    let most = 0;
    let starts = 0;
    api.call = (async (method: string, path: string, ...rest: unknown[]) => {
      const isStart = method === 'POST' && /^\/containers\/(create\?|[^/]+\/start$)/.test(path);
      if (isStart) {
        starts++;
        most = Math.max(most, ++inFlight);
      }
      try {
        return await (send as (...a: unknown[]) => Promise<unknown>)(method, path, ...rest);
      } finally {
        if (isStart) inFlight--;
      }
    }) as typeof api.call;
    try {
      const sbs = await Promise.all(Array.from({ length: 6 }, (_, i) => driver.create(spec(`trace_starts_${i}`))));
      expect((await Promise.all(sbs.map((sb) => sb.exec('echo ok')))).map((r) => r.stdout)).toEqual(Array(6).fill('ok\n'));
      await Promise.all(sbs.map((sb) => sb.destroy()));
      expect(starts).toBe(12); // 6 x (create, start)
      expect(most).toBe(2);
      expect(await containersOn(parseDockerHosts({ cap: 1, hosts: `unix://${ENGINE_1}` })[0]!, owner)).toEqual([]);
    } finally {
      await driver.close();
    }
  });
});
