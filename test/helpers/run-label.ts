// This test run's label, on every container it makes (the servers' sandboxes through
// RFT_DOCKER_LABELS, the in-process drivers', the service containers'), so the global teardown
// (test/global-setup.ts) removes what a failed test left, on every engine, and nothing of the other
// runs sharing this machine and its engines.
import { existsSync } from 'node:fs';
import { DockerApi } from '../../src/sandbox/drivers/docker/api.js';

export const RUN_LABEL = 'rft-endpoints.test-run';
/** Set by the global setup for the whole run; a file run some other way gets one of its own. */
export const runId = (process.env.RFT_TEST_RUN ??= `solo-${process.pid}-${Date.now().toString(36)}`);
export const runLabels: Record<string, string> = { [RUN_LABEL]: runId };
/** For a server's environment. */
export const runLabelsEnv = { RFT_DOCKER_LABELS: `${RUN_LABEL}=${runId}` };

/** The engines of this machine: the default one and .ci/setup-engines.sh's two (the TLS one is also 2.sock). */
export const engineSockets = ['/var/run/docker.sock', '/run/rft-engines/1.sock', '/run/rft-engines/2.sock'].filter((s) => existsSync(s));

async function onEngines<T>(each: (api: DockerApi, engine: string) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (const sock of engineSockets) {
    const api = new DockerApi(sock);
    try {
      out.push(...(await each(api, sock)));
    } catch {
      /* an engine that does not answer has nothing of ours to list */
    } finally {
      await api.close();
    }
  }
  return out;
}

const filter = (labels: string[], extra: Record<string, string[]> = {}) => encodeURIComponent(JSON.stringify({ label: labels, ...extra }));

/** Names of the containers (running or not) on `api`'s engine carrying every one of `labels` (key=value). */
async function namesOn(api: DockerApi, labels: string[]): Promise<string[]> {
  const list = await api.call<{ Names: string[] }[]>('GET', `/containers/json?all=true&filters=${filter(labels)}`);
  return list.body.map((c) => (c.Names[0] ?? '').replace(/^\//, '')).filter(Boolean);
}

/** Removes them; their names. */
async function removeOn(api: DockerApi, labels: string[]): Promise<string[]> {
  const names = await namesOn(api, labels);
  for (const name of names) await api.removeContainer(name);
  return names;
}

/** `engine:name` of the containers (running or not) carrying every one of `labels` (key=value), on every engine. */
export function dockerContainers(labels: string[]): Promise<string[]> {
  return onEngines(async (api, engine) => (await namesOn(api, labels)).map((n) => `${engine}:${n}`));
}

/**
 * Removes the containers (running or not) carrying every one of `labels`, on every engine: what a
 * test left by killing the server that made them, when no later server of that owner reaps them.
 * Returns their `engine:name`.
 */
export function removeContainers(labels: string[]): Promise<string[]> {
  return onEngines(async (api, engine) => (await removeOn(api, labels)).map((n) => `${engine}:${n}`));
}

/** Removes this run's containers and volumes on every engine; returns the containers' `engine:name`. */
export function removeRunContainers(): Promise<string[]> {
  const mine = `${RUN_LABEL}=${runId}`;
  return onEngines(async (api, engine) => {
    const names = await removeOn(api, [mine]);
    const vols = await api.call<{ Volumes: { Name: string }[] | null }>('GET', `/volumes?filters=${filter([mine])}`);
    for (const v of vols.body.Volumes ?? []) await api.call('DELETE', `/volumes/${v.Name}`, undefined, { ok: [404, 409] });
    return names.map((n) => `${engine}:${n}`);
  });
}
