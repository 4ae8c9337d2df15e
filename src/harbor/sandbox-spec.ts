// A Harbor task's sandbox: what of its task.toml becomes the rollout's SandboxSpec.image (the task's
// image, built from environment/ once per environmentDigest, or its prebuilt docker_image; cpus,
// memory_mb, workdir, the agent's user, the container env; the network rule), and the verifier's in
// separate mode. `${VAR}` templates of the env are resolved from an allow-list, never from the
// server's whole environment (the server's secrets are not the task's to read).
import { join } from 'node:path';
import type { SandboxImage } from '../sandbox/types.js';
import type { HarborEnvironmentConfig, HarborTask } from './types.js';

export interface HarborSandboxOptions {
  /** RFT_HARBOR_NETWORK: the Docker network a task asking for one ("public") joins; undefined: none for every task. */
  network?: string | undefined;
  /** Host variables `${VAR}` templates may read (by name); others resolve to their default, else empty. */
  allowedVars?: Readonly<Record<string, string | undefined>>;
}

/** Variables templates may read by default: nothing of the server's secrets, only what describes the locale. */
export const DEFAULT_TEMPLATE_VARS: readonly string[] = ['LANG', 'LC_ALL', 'TZ'];

/** The allow-listed part of the server's environment. */
export function allowedHostVars(names: readonly string[] = DEFAULT_TEMPLATE_VARS): Record<string, string | undefined> {
  return Object.fromEntries(names.map((n) => [n, process.env[n]]));
}

/**
 * Resolves Harbor's `${VAR}` / `${VAR:-default}` templates (H src/harbor/utils/env.py) from `vars`
 * only: a name it does not hold takes its default, else the empty string.
 */
export function resolveTemplates(env: Readonly<Record<string, string>>, vars: Readonly<Record<string, string | undefined>> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    out[k] = v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name: string, dflt: string | undefined) => {
      const val = Object.hasOwn(vars, name) ? vars[name] : undefined;
      return val !== undefined && val !== '' ? val : (dflt ?? '');
    });
  }
  return out;
}

/** The image of one environment table: prebuilt, or built from `contextDir` (keyed by `digest`). */
function imageOf(env: HarborEnvironmentConfig, contextDir: string, digest: string, o: HarborSandboxOptions): SandboxImage {
  const network = env.networkMode === 'public' ? o.network : undefined;
  return {
    ...(env.dockerImage !== undefined ? { ref: env.dockerImage } : { build: { contextDir, digest, timeoutMs: Math.round(env.buildTimeoutSec * 1000) } }),
    ...(env.cpus !== undefined ? { cpus: env.cpus } : {}),
    ...(env.memoryMb !== undefined ? { memoryMb: env.memoryMb } : {}),
    ...(env.workdir !== undefined ? { workdir: env.workdir } : {}),
    ...(Object.keys(env.env).length ? { env: resolveTemplates(env.env, o.allowedVars ?? allowedHostVars()) } : {}),
    ...(network !== undefined ? { network } : {}),
  };
}

/** The rollout's sandbox image: the task's environment, its commands as `[agent] user`. */
export function harborSandboxImage(task: HarborTask, o: HarborSandboxOptions = {}): SandboxImage {
  const img = imageOf(task.config.environment, join(task.dir, 'environment'), task.environmentDigest, o);
  const user = task.config.agent.user;
  return user !== undefined ? { ...img, user: String(user) } : img;
}

/**
 * Separate mode's verifier image: `[verifier.environment]`, built with `tests/` as its context (it holds
 * /tests/test.sh itself: Harbor uploads no tests then), else a fresh copy of the task's environment.
 * Keyed by the task's digest when built from tests/ (environmentDigest covers environment/ only).
 */
export function harborVerifierImage(task: HarborTask, o: HarborSandboxOptions = {}): SandboxImage {
  const v = task.config.verifier.environment;
  const img = v ? imageOf(v, join(task.dir, 'tests'), `${task.digest.replace(/^sha256:/, '')}`, o) : imageOf(task.config.environment, join(task.dir, 'environment'), task.environmentDigest, o);
  // The verifier's container reaches no network, whatever the task asks.
  const { network: _network, ...rest } = img;
  return rest;
}
