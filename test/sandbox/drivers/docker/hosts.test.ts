// RFT_DOCKER_HOSTS and Docker's own DOCKER_HOST / DOCKER_TLS_VERIFY / DOCKER_CERT_PATH conventions.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/config.js';
import { Slots } from '../../../../src/sandbox/drivers/docker/engine.js';
import { endpointFor, parseDockerHosts } from '../../../../src/sandbox/drivers/docker/hosts.js';

const cap = 256;

describe('Docker engines from the configuration', () => {
  let certs: string;
  beforeAll(async () => {
    certs = await mkdtemp(join(tmpdir(), 'rft-certs-'));
    for (const f of ['ca.pem', 'cert.pem', 'key.pem']) await writeFile(join(certs, f), `-----${f}-----`);
  });
  afterAll(() => rm(certs, { recursive: true, force: true }));

  it('defaults to the local socket, named after this host', () => {
    expect(parseDockerHosts({ cap })).toEqual([{ url: 'unix:///var/run/docker.sock', name: `${hostname()}:/var/run/docker.sock`, cap, socketPath: '/var/run/docker.sock' }]);
  });

  it('takes RFT_DOCKER_SOCKET, then DOCKER_HOST, when RFT_DOCKER_HOSTS is unset', () => {
    expect(parseDockerHosts({ cap, socket: '/run/d.sock', dockerHost: 'tcp://10.0.0.2:2375' })[0]?.socketPath).toBe('/run/d.sock');
    expect(parseDockerHosts({ cap, dockerHost: 'tcp://10.0.0.2:2375' })[0]).toMatchObject({ host: '10.0.0.2', port: 2375, name: '10.0.0.2:2375' });
  });

  it('reads a list with per-engine caps and names', () => {
    const hosts = parseDockerHosts({ cap, hosts: 'unix:///run/a.sock?cap=8&name=a, /run/b.sock?cap=16 ,tcp://[::1]:2375?name=c' });
    expect(hosts.map((h) => [h.name, h.cap])).toEqual([
      ['a', 8],
      [`${hostname()}:/run/b.sock`, 16],
      ['c', cap],
    ]);
    expect(hosts[2]).toMatchObject({ host: '::1', port: 2375 });
    expect(hosts.map((h) => h.starts)).toEqual([undefined, undefined, undefined]);
    expect(parseDockerHosts({ cap, hosts: 'tcp://[::1]:2375?starts=32' })[0]?.starts).toBe(32);
    expect(hosts[2]?.tls).toBeUndefined();
  });

  it('uses TLS with the certificates of DOCKER_CERT_PATH when DOCKER_TLS_VERIFY is set, port 2376 by default', () => {
    const [h] = parseDockerHosts({ cap, hosts: 'tcp://engine.internal', tlsVerify: '1', certPath: certs });
    expect(h).toMatchObject({ host: 'engine.internal', port: 2376, tls: { certPath: certs, verify: true } });
    const ep = endpointFor(h!);
    expect(ep.tls?.verify).toBe(true);
    expect(ep.tls?.ca?.toString()).toBe('-----ca.pem-----');
    expect(ep.tls?.cert?.toString()).toBe('-----cert.pem-----');
  });

  it('takes a per-engine certificate folder and verification setting', () => {
    const [h] = parseDockerHosts({ cap, hosts: `tcp://10.0.0.3:2376?cert_path=${certs}&tls_verify=0` });
    expect(h?.tls).toEqual({ certPath: certs, verify: false });
  });

  it.each([
    ['http://10.0.0.2', 'expected unix'],
    ['unix://relative.sock', 'absolute path'],
    ['tcp://h:1?nope=1', 'unknown setting'],
    ['tcp://h:1?cap=0', 'cap must be'],
    ['tcp://h:1?starts=0', 'starts must be'],
    ['tcp://h:1?starts=2.5', 'starts must be'],
    ['tcp://h:2376?tls_verify=1', 'certificate folder'],
    ['/a.sock?name=x,/b.sock?name=x', 'twice'],
  ])('refuses %s at boot', (hosts, why) => {
    expect(() => parseDockerHosts({ cap, hosts })).toThrow(why);
    expect(() => loadConfig({ RFT_DOCKER_HOSTS: hosts })).toThrow(expect.objectContaining({ code: 'RFT_ERR_CONFIG' }));
  });

  it('is a boot error when a certificate file is missing', () => {
    const [h] = parseDockerHosts({ cap, hosts: `tcp://h:2376?cert_path=${join(certs, 'nope')}&tls_verify=1` });
    expect(() => endpointFor(h!)).toThrow(expect.objectContaining({ code: 'RFT_ERR_CONFIG' }));
  });

  it('flows into the server configuration with the runtime and warm pool', () => {
    const c = loadConfig({ RFT_DOCKER_HOSTS: '/run/a.sock?cap=4', RFT_DOCKER_RUNTIME: 'runsc', RFT_DOCKER_WARM: '2' });
    expect(c.sandbox.dockerHosts.map((h) => h.cap)).toEqual([4]);
    expect(c.sandbox.dockerRuntime).toBe('runsc');
    expect(c.sandbox.dockerWarm).toBe(2);
    // the pool learns the step by default (the budget shared with bwrap), off with a zero budget
    expect([c.sandbox.dockerWarmMaxMb, c.sandbox.dockerWarmIdleMs]).toEqual([512, 30 * 60_000]);
    expect(loadConfig({ RFT_SANDBOX_WARM_MAX_MB: '0', RFT_SANDBOX_WARM_IDLE_MS: '5000' }).sandbox).toMatchObject({ dockerWarmMaxMb: 0, dockerWarmIdleMs: 5000, localWarmMaxMb: 0 });
  });

  it('takes extra container labels as key=value pairs, and refuses anything else at boot', () => {
    expect(loadConfig({ RFT_DOCKER_LABELS: 'team=rl,rft-endpoints.test-run=run-1' }).sandbox.dockerLabels).toEqual({ team: 'rl', 'rft-endpoints.test-run': 'run-1' });
    expect(loadConfig({}).sandbox.dockerLabels).toEqual({});
    for (const bad of ['team', 'team=a=b', 'Team=a', 'a=b,', 'a=b c']) {
      expect(() => loadConfig({ RFT_DOCKER_LABELS: bad })).toThrow(expect.objectContaining({ code: 'RFT_ERR_CONFIG' }));
    }
  });
});

describe('Slots (container starts per engine)', () => {
  it('runs at most n tasks at once and starts the others in arrival order, through failures too', async () => {
    const slots = new Slots(2);
    const release: (() => void)[] = [];
    const started: number[] = [];
    let running = 0;
    let most = 0;
    const tasks = Array.from({ length: 6 }, (_, i) =>
      slots.run(async () => {
        started.push(i);
        most = Math.max(most, ++running);
        await new Promise<void>((r) => release.push(r));
        running--;
        if (i === 1) throw new Error('task 1 fails');
        return i;
      }),
    );
    const settled = Promise.allSettled(tasks);
    // Release whichever task holds a slot, one at a time, until all six have run.
    for (let n = 0; n < 6; n++) {
      while (release.length <= n) await new Promise((r) => setImmediate(r));
      release[n]!();
    }
    const results = await settled;
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(2);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
  });
});
