// A Harbor task's image as the rollout's sandbox (issue 40): built once per environment digest and
// engine (single-flight), its failures coded and not the model's, task.toml's workdir, users,
// resources and env applied, no network, a warm pool per image, separate verifier mode; and the row
// side: `sandbox.harbor` resolved through the lookup, an unknown task the row's 400.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerDriver } from '../../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../../src/sandbox/drivers/docker/hosts.js';
import { DockerApi } from '../../src/sandbox/drivers/docker/api.js';
import { builtTag } from '../../src/sandbox/drivers/docker/images.js';
import { harborSandboxImage, resolveTemplates } from '../../src/harbor/sandbox-spec.js';
import { parseReward, verifyHarborTask } from '../../src/harbor/verify.js';
import { workspaceSource } from '../../src/sandbox/workspace/workspace.js';
import { failureClass } from '../../src/doors/core.js';
import { errors, isRftError } from '../../src/errors.js';
import type { HarborTask } from '../../src/harbor/types.js';
import type { Sandbox, SandboxImage } from '../../src/sandbox/types.js';
import { describeIf } from '../helpers/require.js';
import { runLabels } from '../helpers/run-label.js';
import { DOCKER_IMAGE, GVISOR_ENGINE, testLimits, until } from '../sandbox/helpers.js';
import { baseImageOn, makeTask, removeTaskImages, SCOPE_LABEL, type TaskFolder } from './task-folders.js';

const SCOPE = 'sandbox-image';
const makeScoped = (t: TaskFolder): Promise<HarborTask> => makeTask(t, undefined, SCOPE);

describe('reward files by Harbor\'s rule', () => {
  it('reward.txt: a float kept as is; empty and unparsable are their own kinds', () => {
    expect(parseReward('reward.txt', ' 0.3333\n')).toEqual({ ok: true, score: 0.3333, subscores: {} });
    expect(parseReward('reward.txt', '\n')).toEqual({ ok: false, reason: 'RewardFileEmpty' });
    expect(parseReward('reward.txt', 'one')).toEqual({ ok: false, reason: 'VerifierOutputParse' });
    expect(parseReward('reward.txt', '0x1')).toEqual({ ok: false, reason: 'VerifierOutputParse' });
    expect(parseReward('reward.txt', 'nan')).toEqual({ ok: false, reason: 'VerifierOutputParse' });
  });
  it('reward.json: `reward` is the score, else the mean; the other names are subscores; pydantic\'s coercions', () => {
    expect(parseReward('reward.json', '{"reward": 0.5, "port": 1, "mode": 0}')).toEqual({ ok: true, score: 0.5, subscores: { port: 1, mode: 0 } });
    expect(parseReward('reward.json', '{"a": 1, "b": "0.5", "c": false}')).toEqual({ ok: true, score: 0.5, subscores: { a: 1, b: 0.5, c: 0 } });
    for (const bad of ['[1]', '1', '{"a": "x"}', '{"a": null}', '{}', '{']) expect(parseReward('reward.json', bad)).toEqual({ ok: false, reason: 'VerifierOutputParse' });
    expect(parseReward('reward.json', '  ')).toEqual({ ok: false, reason: 'RewardFileEmpty' });
  });
  it('${VAR} templates read the allow-list only, never the server\'s environment', () => {
    process.env.RFT_TEST_SECRET_FOR_HARBOR = 'leaked';
    expect(resolveTemplates({ A: '${RFT_TEST_SECRET_FOR_HARBOR}', B: '${RFT_TEST_SECRET_FOR_HARBOR:-dflt}', C: 'x${LANG}y' }, { LANG: 'C' })).toEqual({ A: '', B: 'dflt', C: 'xCy' });
  });
});

describe('a row names its Harbor task', () => {
  const task = { name: 't', dir: '/nonexistent/t', instruction: '', digest: 'd'.repeat(64), environmentDigest: 'e'.repeat(64), config: { schemaVersion: '1.4', metadata: {}, agent: { user: 'agent' }, verifier: { timeoutSec: 1, env: {}, mode: 'shared' }, environment: { buildTimeoutSec: 60, env: { K: 'v' }, networkMode: 'public', workdir: '/w', cpus: 2, memoryMb: 256 }, solution: { env: {} } } } as HarborTask;
  const lookup = (ref: string) => (ref === 'env/t' ? task : undefined);

  it('a known task becomes the sandbox image; network only when the server names one', async () => {
    const src = await workspaceSource({ sandbox: { harbor: 'env/t' } }, '/tmp', { lookup });
    expect(src.image).toEqual({ build: { contextDir: '/nonexistent/t/environment', digest: 'e'.repeat(64), timeoutMs: 60_000 }, cpus: 2, memoryMb: 256, workdir: '/w', env: { K: 'v' }, user: 'agent' });
    expect((await workspaceSource({ sandbox: { harbor: 'env/t' } }, '/tmp', { lookup, network: 'tasks-net' })).image?.network).toBe('tasks-net');
  });
  it('an unknown task (or no lookup) is RFT_ERR_HARBOR_UNKNOWN_TASK, the row\'s even at a tool call', async () => {
    for (const harbor of [{ lookup }, {}]) {
      const e = await workspaceSource({ sandbox: { harbor: 'env/nope' } }, '/tmp', harbor).catch((x: unknown) => x);
      expect(isRftError(e) && e.code).toBe(errors.harborUnknownTask.code);
      expect(failureClass(e, 'call')).toBe('row');
    }
  });
});

const ENGINES = [
  { name: 'docker', socket: '/var/run/docker.sock', runtime: undefined },
  { name: 'gvisor', socket: GVISOR_ENGINE.replace(/^unix:\/\//, ''), runtime: 'runsc' },
] as const;

for (const eng of ENGINES) {
  const base = await baseImageOn(eng.socket);
  describeIf(base !== undefined, `Harbor task images on ${eng.name}`, `no engine at ${eng.socket} with a base image`)(`Harbor task images on ${eng.name}`, () => {
    let driver: DockerDriver;
    const made: Sandbox[] = [];
    const mk = (warmPool = 0) =>
      new DockerDriver({
        instanceId: `harbor-img-${eng.name}-${process.pid}`,
        image: DOCKER_IMAGE,
        labels: runLabels,
        hosts: parseDockerHosts({ cap: 100, hosts: `unix://${eng.socket}` }),
        ...(eng.runtime ? { runtime: eng.runtime } : {}),
        ...(warmPool ? { warmPool } : {}),
      });
    const create = async (d: DockerDriver, image: SandboxImage, id: string): Promise<Sandbox> => {
      const sb = await d.create({ traceId: `harbor_${id}`, limits: testLimits, labels: {}, image });
      made.push(sb);
      return sb;
    };

    beforeAll(async () => {
      driver = mk();
      await driver.available();
    });
    afterAll(async () => {
      await Promise.all(made.map((s) => s.destroy().catch(() => {})));
      await driver?.close();
      await removeTaskImages(eng.socket, SCOPE);
    }, 120_000);

    it('a Dockerfile is built once per digest however many rollouts start at once; the same digest again builds nothing', async () => {
      const task = await makeScoped({ name: 'once', dockerfile: `FROM ${base}\nUSER root\nWORKDIR /app\nRUN echo built > /app/marker\n`, testSh: 'true\n' });
      const before = driver.images.builds;
      const sbs = await Promise.all([1, 2, 3, 4].map((i) => create(driver, harborSandboxImage(task), `once${i}`)));
      expect(driver.images.builds - before).toBe(1);
      for (const sb of sbs) expect((await sb.exec('cat marker')).stdout).toBe('built\n');
      // A new driver (a restarted server) finds the image by its tag: no build.
      const again = mk();
      await create(again, harborSandboxImage(task), 'once5');
      expect(again.images.builds).toBe(0);
      await again.close();
      // The image removed from the engine since (an operator's prune): the next rollout builds it again, not a 500.
      const api = new DockerApi(eng.socket);
      for (const sb of sbs) await sb.destroy();
      await api.call('DELETE', `/images/${encodeURIComponent(builtTag(task.environmentDigest))}?force=true`);
      await api.close();
      const rebuilt = await create(driver, harborSandboxImage(task), 'once6');
      expect((await rebuilt.exec('cat marker')).stdout).toBe('built\n');
      expect(driver.images.builds - before).toBe(2);
    }, 300_000);

    it('a failed build, a build past build_timeout_sec and a missing prebuilt image are coded errors of ours (5xx), never the model\'s', async () => {
      const broken = await makeScoped({ name: 'broken', dockerfile: `FROM ${base}\nRUN exit 3\n`, testSh: 'true\n' });
      const e1 = await create(driver, harborSandboxImage(broken), 'broken').catch((x: unknown) => x);
      expect(isRftError(e1) && e1.code).toBe(errors.harborImageBuild.code);
      const slow = await makeScoped({ name: 'slow-build', dockerfile: `FROM ${base}\nRUN for i in $(seq 29); do echo tick; sleep 1; done\n`, testSh: 'true\n', config: { environment: { buildTimeoutSec: 1 } } });
      const e2 = await create(driver, harborSandboxImage(slow), 'slowbuild').catch((x: unknown) => x);
      expect(isRftError(e2) && e2.code).toBe(errors.harborImageBuildTimeout.code);
      // The build is cancelled, not left running on the engine: its step's container goes. Before, a build that
      // kept printing ran on to its end (the request's idle timeout alone ended a silent one, 5 s late).
      const engineApi = new DockerApi(eng.socket);
      const building = async () => (await engineApi.call<{ Command: string }[]>('GET', '/containers/json?all=1')).body.filter((c) => c.Command.includes('echo tick'));
      // (past the time the step's container takes to start, so one left running is there to be seen)
      await new Promise((r) => setTimeout(r, 5_000));
      await until(async () => (await building()).length === 0, 15_000);
      await engineApi.close();
      const e3 = await create(driver, { ref: 'rft-harbor-test-absent:never' }, 'absent').catch((x: unknown) => x);
      expect(isRftError(e3) && e3.code).toBe(errors.harborImageMissing.code);
      for (const e of [e1, e2, e3]) expect(failureClass(e, 'call')).toBe('ours');
    }, 300_000);

    it('task.toml\'s workdir, [agent] user, env, cpus and memory apply; the verifier runs as [verifier].user; no network', async () => {
      const task = await makeScoped({
        name: 'users',
        dockerfile: `FROM ${base}\nUSER root\nRUN useradd -m -u 4321 agent && useradd -m -u 4322 checker\nWORKDIR /app\n`,
        testSh: '#!/bin/bash\nmkdir -p /logs/verifier\n[ "$(id -un)" = checker ] && [ "$(pwd)" = /srv/work ] && [ "$CHECK" = yes ] && [ -f /srv/work/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
        config: { agent: { user: 'agent' }, verifier: { user: 'checker', env: { CHECK: 'yes' } }, environment: { workdir: '/srv/work', env: { GREETING: 'hi' }, cpus: 0.5, memoryMb: 300 } },
      });
      const sb = await create(driver, harborSandboxImage(task), 'users');
      expect((await sb.exec('id -un; pwd; echo $GREETING')).stdout).toBe('agent\n/srv/work\nhi\n');
      // The workdir Docker made is root's: the agent user is given it by the task, as Harbor would; here root does it.
      await sb.admin!.exec(['chown', 'agent', '/srv/work'], { cwd: '/', timeoutMs: 10_000 });
      await sb.writeFile('done', 'x');
      expect(['lo\n', '']).toContain((await sb.exec('for f in /sys/class/net/*; do [ -e "$f" ] && echo "${f##*/}"; done; true')).stdout);
      const api = new DockerApi(eng.socket);
      const info = await api.call<{ HostConfig: { NetworkMode: string; NanoCpus: number; Memory: number; CapAdd: string[]; CapDrop: string[]; ReadonlyRootfs: boolean } }>('GET', `/containers/${sb.ref!.container}/json`);
      await api.close();
      expect(info.body.HostConfig).toMatchObject({ NetworkMode: 'none', NanoCpus: 500_000_000, CapDrop: ['ALL'], ReadonlyRootfs: false });
      expect(info.body.HostConfig.Memory).toBe(300 * 2 ** 20 + (eng.runtime ? 256 * 2 ** 20 : 0));
      expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'scored', score: 1 });
      // Another replica opening it from its placement runs as the same user, in the same workdir.
      const replica = mk();
      const att = await replica.attach('harbor_users', sb.ref!, testLimits);
      expect((await att.exec('id -un; pwd')).stdout).toBe('agent\n/srv/work\n');
      expect(att.admin?.workdir).toBe('/srv/work');
      await replica.close();
    }, 300_000);

    it('separate verifier mode: a fresh container of [verifier.environment] with the artifacts copied in; the agent\'s container is not graded', async () => {
      const task = await makeScoped({
        name: 'separate',
        dockerfile: `FROM ${base}\nUSER root\nWORKDIR /app\n`,
        testSh: '#!/bin/bash\nmkdir -p /logs/verifier\n[ -f /verifier-image ] && [ "$(cat /app/out.txt)" = 42 ] && [ ! -e /app/junk ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n',
        config: { artifacts: ['/app/out.txt'], verifier: { mode: 'separate' } },
      });
      // [verifier.environment]: an image built from tests/ that holds /tests/test.sh itself.
      const { writeFile } = await import('node:fs/promises');
      await writeFile(`${task.dir}/tests/Dockerfile`, `FROM ${base}\nUSER root\nCOPY test.sh /tests/test.sh\nRUN touch /verifier-image\nWORKDIR /app\nLABEL rft-endpoints.test-run=${runLabels['rft-endpoints.test-run']} ${SCOPE_LABEL}=${SCOPE}\n`);
      task.config.verifier.environment = { buildTimeoutSec: 300, env: {}, networkMode: 'no-network' };
      const sb = await create(driver, harborSandboxImage(task), 'sep');
      await sb.exec('echo 42 > /app/out.txt; echo x > /app/junk; mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt');
      const fresh: Sandbox[] = [];
      const v = await verifyHarborTask(sb, task, { freshSandbox: async (image) => { const f = await create(driver, image, 'sep-verifier'); fresh.push(f); return f; } });
      expect(v, v.log).toMatchObject({ kind: 'scored', score: 1 });
      expect(fresh).toHaveLength(1);
      await until(async () => (await fresh[0]!.exec('true').then(() => false, () => true)), 30_000);
    }, 300_000);

    it('the warm pool learns per image: a second step of the same task is served prepared', async () => {
      const task = await makeScoped({ name: 'pooled', dockerfile: `FROM ${base}\nUSER root\nWORKDIR /app\n`, testSh: 'true\n' });
      const pooled = mk(2);
      try {
        const image = harborSandboxImage(task);
        await (await pooled.create({ traceId: 'harbor_pool0', limits: testLimits, labels: {}, image })).destroy();
        await until(async () => (pooled.poolStats().kinds.find((k) => k.kind.includes('rft-harbor-env'))?.warm ?? 0) >= 2, 120_000);
        const sb = await pooled.create({ traceId: 'harbor_pool1', limits: testLimits, labels: {}, image });
        expect(pooled.poolStats().hits).toBe(1);
        expect((await sb.exec('pwd')).stdout).toBe('/app\n');
        await sb.destroy();
        // Another image's rollout is never handed this image's container.
        const other = await makeScoped({ name: 'pooled-other', dockerfile: `FROM ${base}\nUSER root\nWORKDIR /other\n`, testSh: 'true\n' });
        const sb2 = await pooled.create({ traceId: 'harbor_pool2', limits: testLimits, labels: {}, image: harborSandboxImage(other) });
        expect((await sb2.exec('pwd')).stdout).toBe('/other\n');
        expect(pooled.poolStats().hits).toBe(1);
        await sb2.destroy();
      } finally {
        await pooled.close();
      }
    }, 300_000);
  });
}
