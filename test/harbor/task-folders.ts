// Small Harbor task folders built in the test (no downloads: FROM an image the engine already has),
// and the HarborTask values the loader would make of them (built by hand: the loader is another
// helper's; its merge replaces nothing here). Images built from them carry the run's labels and are
// removed by removeTaskImages.
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerApi } from '../../src/sandbox/drivers/docker/api.js';
import { TASK_IMAGE_REPO } from '../../src/sandbox/drivers/docker/images.js';
import type { HarborTask, HarborTaskConfig } from '../../src/harbor/types.js';
import { runId } from '../helpers/run-label.js';

/** The base images the engines of this machine have (never pulled): the first one present is used. */
export const BASE_IMAGES = ['rft-endpoints-base:bookworm', 'rft-endpoints-sandbox:latest'];

export async function baseImageOn(socket: string): Promise<string | undefined> {
  const api = new DockerApi(socket);
  try {
    for (const img of BASE_IMAGES) {
      const res = await api.call('GET', `/images/${encodeURIComponent(img)}/json`, undefined, { ok: [404] }).catch(() => null);
      if (res?.status === 200) return img;
    }
    return undefined;
  } finally {
    await api.close();
  }
}

export interface TaskFolder {
  name: string;
  dockerfile: string;
  testSh: string;
  /** Extra files of environment/ (name -> content). */
  envFiles?: Record<string, string>;
  tests?: Record<string, string>;
  config?: Partial<Omit<HarborTaskConfig, 'verifier' | 'environment' | 'agent'>> & {
    verifier?: Partial<HarborTaskConfig['verifier']>;
    environment?: Partial<HarborTaskConfig['environment']>;
    agent?: HarborTaskConfig['agent'];
  };
}

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Writes the task folder under a fresh temp root and returns its HarborTask. `salt` makes its image this run's own. */
/**
 * Label of the images a test file builds (each file its own, so one file's cleanup never removes an
 * image another file running at the same time uses).
 */
export const SCOPE_LABEL = 'rft-endpoints.test-scope';

export async function makeTask(t: TaskFolder, root?: string, scope = 'default'): Promise<HarborTask> {
  const base = root ?? (await mkdtemp(join(tmpdir(), 'rft-harbor-task-')));
  const dir = join(base, t.name);
  await mkdir(join(dir, 'environment'), { recursive: true });
  await mkdir(join(dir, 'tests'), { recursive: true });
  // The run id goes into the Dockerfile: each run builds (and removes) its own images.
  const dockerfile = `${t.dockerfile}\nLABEL rft-endpoints.test-run=${runId} ${SCOPE_LABEL}=${scope}\n`;
  await writeFile(join(dir, 'environment', 'Dockerfile'), dockerfile);
  for (const [n, c] of Object.entries(t.envFiles ?? {})) await writeFile(join(dir, 'environment', n), c);
  await writeFile(join(dir, 'tests', 'test.sh'), t.testSh);
  await chmod(join(dir, 'tests', 'test.sh'), 0o755);
  for (const [n, c] of Object.entries(t.tests ?? {})) await writeFile(join(dir, 'tests', n), c);
  await writeFile(join(dir, 'instruction.md'), `Task ${t.name}.\n`);
  const envDigest = sha(JSON.stringify([dockerfile, t.envFiles ?? {}]));
  const c = t.config ?? {};
  const config: HarborTaskConfig = {
    schemaVersion: '1.4',
    metadata: {},
    agent: c.agent ?? {},
    verifier: { timeoutSec: 30, env: {}, mode: 'shared', ...c.verifier },
    environment: { buildTimeoutSec: 300, env: {}, networkMode: 'no-network', ...c.environment },
    solution: { env: {} },
    ...(c.artifacts ? { artifacts: c.artifacts } : {}),
  };
  return { name: t.name, dir, instruction: `Task ${t.name}.`, config, digest: sha(envDigest + t.testSh + JSON.stringify(t.tests ?? {})), environmentDigest: envDigest };
}

/** Removes the task images this run built for `scope`. */
export async function removeTaskImages(socket: string, scope = 'default'): Promise<number> {
  const api = new DockerApi(socket);
  let n = 0;
  try {
    const filters = encodeURIComponent(JSON.stringify({ label: [`rft-endpoints.test-run=${runId}`, `${SCOPE_LABEL}=${scope}`] }));
    const list = await api.call<{ Id: string; RepoTags?: string[] }[]>('GET', `/images/json?filters=${filters}`);
    for (const img of list.body) {
      for (const tag of img.RepoTags ?? []) if (tag.startsWith(`${TASK_IMAGE_REPO}:`)) await api.call('DELETE', `/images/${encodeURIComponent(tag)}?force=true`, undefined, { ok: [404, 409] });
      await api.call('DELETE', `/images/${img.Id}?force=true`, undefined, { ok: [404, 409] });
      n++;
    }
  } finally {
    await api.close();
  }
  return n;
}
