// RFT_DOCKER_RUNTIME names a runtime every engine must have: one without it is refused at boot with
// a coded error, not found out at each container creation (500 "Unknown runtime" per rollout).
// The main engine has no runsc on this machine; the extra engines of .ci/setup-engines.sh have it.
import { existsSync } from 'node:fs';
import { expect, it } from 'vitest';
import { DockerDriver } from '../../../../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../../../../src/sandbox/drivers/docker/hosts.js';
import { selectDriver } from '../../../../src/sandbox/select.js';
import { describeIf } from '../../../helpers/require.js';
import { DOCKER_IMAGE, GVISOR_ENGINE } from '../../helpers.js';

const MAIN = '/var/run/docker.sock';
const present = existsSync(MAIN) && existsSync(GVISOR_ENGINE.replace(/^unix:\/\//, ''));

describeIf(present, 'RFT_DOCKER_RUNTIME checked at boot', 'the main Docker engine and the gVisor engine of .ci/setup-engines.sh are needed')('RFT_DOCKER_RUNTIME', () => {
  it('refuses to boot on an engine without the runtime, naming the engine and the runtimes it has', async () => {
    const boot = selectDriver('docker', { sandboxesRoot: '/nonexistent', instanceId: 'runtime-test', dockerImage: DOCKER_IMAGE, dockerRuntime: 'runsc' });
    await expect(boot).rejects.toMatchObject({ code: 'RFT_ERR_DOCKER_RUNTIME', details: { runtime: 'runsc', engine: 'local', known_runtimes: expect.arrayContaining(['runc']) } });
  });

  it('refuses when one of several engines lacks it', async () => {
    const hosts = parseDockerHosts({ cap: 1, hosts: `${GVISOR_ENGINE}?name=gv,unix://${MAIN}?name=main` });
    const driver = new DockerDriver({ instanceId: 'runtime-test', image: DOCKER_IMAGE, hosts, runtime: 'runsc' });
    try {
      await expect(driver.available()).rejects.toMatchObject({ code: 'RFT_ERR_DOCKER_RUNTIME', details: { engine: 'main' } });
    } finally {
      await driver.close();
    }
  });

  it('boots on an engine that has it', async () => {
    const driver = new DockerDriver({ instanceId: 'runtime-test', image: DOCKER_IMAGE, hosts: parseDockerHosts({ cap: 1, hosts: GVISOR_ENGINE }), runtime: 'runsc' });
    try {
      expect(await driver.available()).toBe(true);
    } finally {
      await driver.close();
    }
  });
});
