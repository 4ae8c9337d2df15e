// The two extra Docker engines of .ci/setup-engines.sh (one over TLS), as RFT_DOCKER_HOSTS, and a probe for describeIf.
import { DockerApi } from '../../src/sandbox/drivers/docker/api.js';
import { endpointFor, parseDockerHosts } from '../../src/sandbox/drivers/docker/hosts.js';

export const EXTRA_ENGINE_HOSTS =
  'unix:///run/rft-engines/1.sock?name=e1&cap=40,tcp://127.0.0.1:21376?name=e2&cap=40&cert_path=/etc/rft-engines/tls/client&tls_verify=1';
export const extraEngines = parseDockerHosts({ cap: 1, hosts: EXTRA_ENGINE_HOSTS });

/** Why an extra engine cannot be used, or undefined when both answer. */
export async function extraEnginesMissing(): Promise<string | undefined> {
  for (const h of extraEngines) {
    const api = new DockerApi(endpointFor(h));
    try {
      await api.call('GET', '/_ping', undefined, { timeoutMs: 3_000 });
    } catch (e) {
      return `Docker engine ${h.name} (run .ci/setup-engines.sh): ${(e as Error).message}`;
    } finally {
      await api.close();
    }
  }
  return undefined;
}
