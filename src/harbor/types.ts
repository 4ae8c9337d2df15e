// A Harbor task as this server reads it (../shared/docs/harbor-tasks.md, sections 1-3): the parsed and
// normalised task.toml, the task's folder, and its instruction. The loader (task.ts, dataset.ts) makes
// these; the sandbox side (sandbox-spec.ts: the task's image, resources, workdir, users) and the grading
// side (verify.ts: Harbor's verify step, hardened) read them. Nothing here knows a trainer's wire format.

/** Harbor's network modes (`[environment] network_mode`; `allow_internet` mapped onto them). */
export type HarborNetworkMode = 'public' | 'no-network' | 'allowlist';

/** `[environment]` (and `[verifier.environment]`), normalised: `memory`/`storage` strings become `*_mb`. */
export interface HarborEnvironmentConfig {
  /** A prebuilt image; without it, `environment/Dockerfile` is built (context `environment/`). */
  dockerImage?: string;
  /** Limit for build + start, seconds (Harbor's default 600). */
  buildTimeoutSec: number;
  cpus?: number;
  memoryMb?: number;
  storageMb?: number;
  /** cwd of every command; none = the image's WORKDIR. */
  workdir?: string;
  /** The container's env (all phases), `${VAR}` / `${VAR:-default}` left unresolved here. */
  env: Record<string, string>;
  /** Harbor's default is `public`; this server runs `no-network` unless its configuration allows more. */
  networkMode: HarborNetworkMode;
  allowedHosts?: string[];
}

export interface HarborTaskConfig {
  schemaVersion: string;
  /** `[task] name` ("org/name") when present. */
  packageName?: string;
  metadata: Record<string, unknown>;
  agent: { timeoutSec?: number; user?: string | number };
  verifier: {
    /** Limit of the whole verify step, seconds (Harbor's default 600). */
    timeoutSec: number;
    env: Record<string, string>;
    user?: string | number;
    mode: 'shared' | 'separate';
    /** `[verifier.environment]` in separate mode; absent = a fresh copy of `environment`. */
    environment?: HarborEnvironmentConfig;
  };
  environment: HarborEnvironmentConfig;
  solution: { env: Record<string, string> };
  /**
   * Root `artifacts`: absolute paths collected from the agent's container after its phase; in separate
   * verifier mode they are copied into the verifier's container at the same paths (section 3.1).
   * Absent: none. `{source, destination?}` entries are given by their source.
   */
  artifacts?: string[];
}

/** One valid task folder. */
export interface HarborTask {
  /** The row id: the task folder's name (unique within its environment). */
  name: string;
  /** Absolute path of the task folder (holds task.toml, instruction.md, environment/, tests/, solution/?). */
  dir: string;
  /** instruction.md with its leading canary lines stripped. */
  instruction: string;
  config: HarborTaskConfig;
  /** SHA-256 over the task's files (the digest NeMo Gym's materialiser uses, section 5). */
  digest: string;
  /** SHA-256 over `environment/` alone: the cache key of a built image. */
  environmentDigest: string;
}

/** A task folder that is not a valid task, and Harbor's reason. */
export interface HarborInvalidTask {
  dir: string;
  /** The reason's stable code (RFT_ERR_HARBOR_TASK_*, src/errors.ts): what kind of invalid. */
  code: string;
  reason: string;
}

/**
 * What Harbor's verify step produced (verify.ts). `scored`: the reward file's value (`reward`, else the
 * mean of the components) and the named components; `model`: the task's tests could not score the
 * work (no reward file, an empty or unparsable one, the verifier over its timeout; or, this server's
 * check, the programs the verify step runs were changed in the container): the model's 0;
 * an infrastructure failure is thrown as a coded 5xx error, never returned here.
 */
export type HarborVerdict =
  | { kind: 'scored'; score: number; subscores: Record<string, number>; file: 'reward.json' | 'reward.txt'; log: string }
  | { kind: 'model'; score: 0; reason: 'RewardFileNotFound' | 'RewardFileEmpty' | 'VerifierOutputParse' | 'VerifierTimeout' | 'VerifierToolsChanged'; log: string };

/**
 * How a rollout's row names its task: `row.sandbox.harbor` = "<environment>/<task name>". The sandbox
 * side asks this (registered by the loader at boot) for the task, and gets undefined for an unknown one.
 */
export type HarborTaskLookup = (ref: string) => HarborTask | undefined;
