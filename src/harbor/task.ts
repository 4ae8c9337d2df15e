// One Harbor task folder read as this server runs it (../shared/docs/harbor-tasks.md, sections 1-2):
// task.toml parsed and normalised as Harbor's pydantic models do (unknown keys ignored; the legacy
// root `version`, `memory`/`storage` strings and `allow_internet` mapped onto today's keys), Harbor's
// validity rule (task.toml, instruction.md, tests/test.sh, environment/ with a Dockerfile unless
// `docker_image`), the instruction with its leading canary lines stripped, and two digests: `digest`
// over the task's files (NeMo Gym's materialiser: sorted `path NUL sha256 LF` records) and
// `environmentDigest` over environment/ alone (the cache key of the built image).
//
// What one sandbox per rollout cannot run is refused with a coded reason, never dropped silently:
// a compose file with any service but `main` (RFT_ERR_HARBOR_TASK_COMPOSE), `[[steps]]`
// (RFT_ERR_HARBOR_TASK_MULTI_STEP), Windows, GPUs and TPUs (RFT_ERR_HARBOR_TASK_UNSUPPORTED).
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { errors, isRftError, type RftError } from '../errors.js';
import type { HarborEnvironmentConfig, HarborInvalidTask, HarborTask, HarborTaskConfig } from './types.js';

/** Harbor's `[task] name` rule (ORG_NAME_PATTERN): "org/name", letters, digits, `-_.`, not starting with a dot. */
const ORG_NAME = /^[a-zA-Z0-9][a-zA-Z0-9._-]*\/[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

/** A number as pydantic's lax mode takes one: a TOML number, or a string holding one. */
const num = z.union([z.number(), z.string().trim().regex(/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/).transform(Number)]);
const int = num.refine((n) => Number.isInteger(n), 'must be an integer');
const user = z.union([z.string(), z.number().int()]);
const strMap = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String));
const networkMode = z.enum(['public', 'no-network', 'allowlist']);

const environmentSchema = z.looseObject({
  build_timeout_sec: num.optional(),
  docker_image: z.string().min(1).nullish(),
  os: z.string().transform((s) => s.toLowerCase()).pipe(z.enum(['linux', 'windows'])).optional(),
  cpus: int.nullish(),
  memory_mb: int.nullish(),
  storage_mb: int.nullish(),
  memory: z.unknown().optional(),
  storage: z.unknown().optional(),
  gpus: int.nullish(),
  tpu: z.unknown().optional(),
  workdir: z.string().nullish(),
  env: strMap.optional(),
  network_mode: networkMode.optional(),
  allowed_hosts: z.array(z.string()).nullish(),
  allow_internet: z.boolean().nullish(),
});

const configSchema = z.looseObject({
  schema_version: z.union([z.string(), z.number().transform(String)]).optional(),
  version: z.union([z.string(), z.number().transform(String)]).optional(),
  task: z.looseObject({ name: z.string().regex(ORG_NAME, 'must be "org/name"').refine((n) => !n.includes('..'), 'must not contain ".."') }).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  agent: z.looseObject({ timeout_sec: num.nullish(), user: user.nullish() }).optional(),
  verifier: z
    .looseObject({
      timeout_sec: num.optional(),
      env: strMap.optional(),
      user: user.nullish(),
      environment_mode: z.enum(['shared', 'separate']).nullish(),
      environment: environmentSchema.nullish(),
    })
    .optional(),
  environment: environmentSchema.optional(),
  solution: z.looseObject({ env: strMap.optional() }).optional(),
  steps: z.array(z.unknown()).nullish(),
  artifacts: z
    .array(z.union([z.string(), z.looseObject({ source: z.string() }).transform((a) => a.source)]))
    .refine((a) => a.every((p) => !p.split('/').includes('..')), "artifact sources must not contain '..'")
    .optional(),
});

type RawEnvironment = z.infer<typeof environmentSchema>;

/** Harbor's `_parse_size_to_mb`: "2G" is 2048, "512M" 512, "1024K" 1; any other form is invalid. */
export function sizeToMb(size: string): number {
  const s = size.trim().toUpperCase();
  const n = Number(s.slice(0, -1));
  const unit = s.at(-1);
  if (s.length < 2 || !Number.isFinite(n) || !['G', 'M', 'K'].includes(unit ?? '')) {
    throw new Error(`invalid size "${size}": expected a form like "1G" or "512M"`);
  }
  return Math.trunc(unit === 'G' ? n * 1024 : unit === 'M' ? n : n / 1024);
}

/** A deprecated string size (`memory`, `storage`) beside its `*_mb` key; both set and different is Harbor's error. */
function legacySize(raw: RawEnvironment, key: 'memory' | 'storage'): number | undefined {
  const mb = raw[`${key}_mb`] ?? undefined;
  const legacy = raw[key];
  if (typeof legacy !== 'string') return mb;
  const converted = sizeToMb(legacy);
  if (mb !== undefined && mb !== converted) throw new Error(`conflicting "${key}" (${legacy}, ${converted} MB) and "${key}_mb" (${mb})`);
  return converted;
}

function environmentOf(raw: RawEnvironment | undefined): HarborEnvironmentConfig & { os: 'linux' | 'windows'; gpus?: number; tpu: boolean } {
  const r = raw ?? {};
  // allow_internet is the pre-1.3 spelling: it decides only where network_mode is not set.
  const mode = r.network_mode ?? (r.allow_internet === false ? 'no-network' : 'public');
  if (r.allowed_hosts && r.allowed_hosts.length > 0 && mode !== 'allowlist') throw new Error("allowed_hosts is only valid with network_mode = 'allowlist'");
  const memoryMb = legacySize(r, 'memory');
  const storageMb = legacySize(r, 'storage');
  return {
    ...(r.docker_image ? { dockerImage: r.docker_image } : {}),
    buildTimeoutSec: r.build_timeout_sec ?? 600,
    ...(r.cpus != null ? { cpus: r.cpus } : {}),
    ...(memoryMb !== undefined ? { memoryMb } : {}),
    ...(storageMb !== undefined ? { storageMb } : {}),
    ...(r.workdir ? { workdir: r.workdir } : {}),
    env: r.env ?? {},
    networkMode: mode,
    ...(r.allowed_hosts ? { allowedHosts: r.allowed_hosts } : {}),
    os: r.os ?? 'linux',
    ...(r.gpus != null ? { gpus: r.gpus } : {}),
    tpu: r.tpu != null,
  };
}

function stripExtras(e: ReturnType<typeof environmentOf>): HarborEnvironmentConfig {
  const { os: _os, gpus: _gpus, tpu: _tpu, ...rest } = e;
  return rest;
}

/** What task.toml says beyond HarborTaskConfig that decides whether this server can run the task. */
export interface ParsedTaskToml {
  config: HarborTaskConfig;
  steps: number;
  os: 'linux' | 'windows';
  gpus: number;
  tpu: boolean;
}

/** task.toml's text, parsed and normalised; throws a plain Error with Harbor's reason when it does not validate. */
export function parseTaskToml(text: string): ParsedTaskToml {
  let data: unknown;
  try {
    data = parseToml(text);
  } catch (e) {
    throw new Error(`not TOML: ${(e as Error).message.split('\n')[0]}`, { cause: e });
  }
  const parsed = configSchema.safeParse(data);
  if (!parsed.success) throw new Error(z.prettifyError(parsed.error).replace(/\n/g, '; '));
  const c = parsed.data;
  const verifier = c.verifier ?? {};
  if (verifier.environment_mode === 'shared' && verifier.environment) {
    throw new Error("[verifier].environment_mode = 'shared' is incompatible with [verifier.environment]");
  }
  const env = environmentOf(c.environment);
  const verifierEnv = verifier.environment ? environmentOf(verifier.environment) : undefined;
  const config: HarborTaskConfig = {
    // Harbor renames a root `version` (schema 1.0) to schema_version; schema_version wins when both are there.
    schemaVersion: c.schema_version ?? c.version ?? '1.4',
    ...(c.task ? { packageName: c.task.name } : {}),
    metadata: c.metadata ?? {},
    agent: {
      ...(c.agent?.timeout_sec != null ? { timeoutSec: c.agent.timeout_sec } : {}),
      ...(c.agent?.user != null ? { user: c.agent.user } : {}),
    },
    verifier: {
      timeoutSec: verifier.timeout_sec ?? 600,
      env: verifier.env ?? {},
      ...(verifier.user != null ? { user: verifier.user } : {}),
      mode: verifier.environment_mode ?? (verifier.environment ? 'separate' : 'shared'),
      ...(verifierEnv ? { environment: stripExtras(verifierEnv) } : {}),
    },
    environment: stripExtras(env),
    solution: { env: c.solution?.env ?? {} },
    ...(c.artifacts?.length ? { artifacts: c.artifacts } : {}),
  };
  return { config, steps: c.steps?.length ?? 0, os: env.os, gpus: Math.max(env.gpus ?? 0, verifierEnv?.gpus ?? 0), tpu: env.tpu || !!verifierEnv?.tpu };
}

/** Harbor's canary lines: an HTML comment or a `#` line that mentions "canary". */
const CANARY_LINE = /^(<!--.*canary.*-->|#.*canary.*)$/i;

/** Harbor's `strip_canary`: leading canary lines go, and the blank lines right after them. */
export function stripCanary(text: string): string {
  const lines = text.split('\n');
  let i = 0;
  while (i < lines.length && CANARY_LINE.test(lines[i]!.trim())) i++;
  while (i < lines.length && lines[i]!.trim() === '') i++;
  return lines.slice(i).join('\n');
}

/** The parts of a task folder its digest covers (NeMo Gym's materialiser, reference section 5). */
const DIGEST_PARTS = ['task.toml', 'instruction.md', 'README.md', 'trajectory.json', 'environment', 'tests', 'solution', 'steps'];

/** `path NUL sha256 LF` for every file under `rel` (a symlink hashed as its target's text, not followed). */
function records(dir: string, rel: string, out: string[]): void {
  const abs = join(dir, rel);
  let st;
  try {
    st = lstatSync(abs);
  } catch {
    return;
  }
  if (st.isDirectory()) {
    for (const name of readdirSync(abs)) records(dir, `${rel}/${name}`, out);
    return;
  }
  const data = st.isSymbolicLink() ? Buffer.from(readlinkSync(abs)) : st.isFile() ? readFileSync(abs) : undefined;
  if (data === undefined) return;
  out.push(`${rel}\0${createHash('sha256').update(data).digest('hex')}\n`);
}

function digestOf(dir: string, parts: readonly string[]): string {
  const out: string[] = [];
  for (const p of parts) records(dir, p, out);
  const h = createHash('sha256');
  for (const r of out.sort()) h.update(r);
  return h.digest('hex');
}

/** SHA-256 over the task's files: sorted `path NUL sha256 LF` records (paths relative to the task folder). */
export function taskDigest(dir: string): string {
  return digestOf(dir, DIGEST_PARTS);
}

/** The same over `environment/` alone: what a built image depends on. */
export function environmentDigest(dir: string): string {
  return digestOf(dir, ['environment']);
}

/** A task folder: one holding task.toml (Harbor's `Task.is_valid_dir` starts there). */
export function looksLikeTask(dir: string): boolean {
  return existsSync(join(dir, 'task.toml'));
}

const COMPOSE_FILES = ['docker-compose.yaml', 'docker-compose.yml', 'compose.yaml', 'compose.yml'];

/**
 * A compose file runs here only as one service named `main` (the agent's, as Harbor names it) that
 * builds `environment/` or names an image: its image then stands for `docker_image`. Anything else
 * (sidecars, other build contexts) would need a second container per rollout.
 */
function composeImage(dir: string, file: string): { image?: string } {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(join(dir, 'environment', file), 'utf8'));
  } catch (e) {
    throw errors.harborTaskCompose(dir, `not YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  const services = (doc as { services?: unknown } | null)?.services;
  const names = services && typeof services === 'object' ? Object.keys(services) : [];
  if (names.length !== 1 || names[0] !== 'main') {
    throw errors.harborTaskCompose(dir, `it has the services ${names.map((n) => `"${n}"`).join(', ') || 'none'}`);
  }
  const main = (services as Record<string, unknown>).main as { image?: unknown; build?: unknown } | null;
  const build = main?.build;
  const context = typeof build === 'string' ? build : build && typeof build === 'object' ? (build as { context?: unknown }).context : undefined;
  if (build !== undefined && context !== undefined && !['.', './'].includes(String(context))) {
    throw errors.harborTaskCompose(dir, `service "main" builds "${String(context)}", not environment/`);
  }
  return typeof main?.image === 'string' && build === undefined ? { image: main.image } : {};
}

/** Harbor's validity rule and this server's limits, as the coded error of the first that fails. */
function check(dir: string, parsed: ParsedTaskToml): HarborTaskConfig {
  const { config } = parsed;
  if (parsed.steps > 0) throw errors.harborTaskMultiStep(dir, parsed.steps);
  if (parsed.os !== 'linux') throw errors.harborTaskUnsupported(dir, `[environment] os = "${parsed.os}": only Linux tasks run here`);
  if (parsed.gpus > 0) throw errors.harborTaskUnsupported(dir, `[environment] gpus = ${parsed.gpus}: the sandboxes have no GPUs`);
  if (parsed.tpu) throw errors.harborTaskUnsupported(dir, '[environment.tpu]: the sandboxes have no TPUs');
  if (!existsSync(join(dir, 'instruction.md'))) throw errors.harborTaskFiles(dir, 'no instruction.md');
  if (!statSync(join(dir, 'environment'), { throwIfNoEntry: false })?.isDirectory()) throw errors.harborTaskFiles(dir, 'no environment/ folder');
  // Separate mode builds its verifier image from tests/, which must hold test.sh itself (Harbor skips the check).
  if (config.verifier.mode === 'shared' && !existsSync(join(dir, 'tests', 'test.sh'))) throw errors.harborTaskFiles(dir, 'no tests/test.sh');
  const compose = COMPOSE_FILES.find((f) => existsSync(join(dir, 'environment', f)));
  let environment = config.environment;
  if (compose) {
    const { image } = composeImage(dir, compose);
    if (image && !environment.dockerImage && !existsSync(join(dir, 'environment', 'Dockerfile'))) environment = { ...environment, dockerImage: image };
  }
  if (!environment.dockerImage && !existsSync(join(dir, 'environment', 'Dockerfile'))) {
    throw errors.harborTaskFiles(dir, 'no environment/Dockerfile and no [environment] docker_image');
  }
  return environment === config.environment ? config : { ...config, environment };
}

export type ReadTask = { task: HarborTask } | { invalid: HarborInvalidTask };

/** One task folder, read whole: the task, or why it is not one (never thrown: the caller reports it). */
export function readHarborTask(taskDir: string, name = basename(taskDir)): ReadTask {
  const dir = resolve(taskDir);
  const invalid = (err: RftError): ReadTask => ({ invalid: { dir, code: err.code, reason: err.message } });
  let text: string;
  try {
    text = readFileSync(join(dir, 'task.toml'), 'utf8');
  } catch (e) {
    return invalid(errors.harborTaskToml(dir, `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`));
  }
  try {
    let parsed: ParsedTaskToml;
    try {
      parsed = parseTaskToml(text);
    } catch (e) {
      throw errors.harborTaskToml(dir, (e as Error).message);
    }
    const config = check(dir, parsed);
    const instruction = stripCanary(readFileSync(join(dir, 'instruction.md'), 'utf8'));
    if (instruction.trim() === '') throw errors.harborTaskFiles(dir, 'instruction.md is empty (after its canary lines)');
    return { task: { name, dir, instruction, config, digest: taskDigest(dir), environmentDigest: environmentDigest(dir) } };
  } catch (e) {
    if (isRftError(e)) return invalid(e);
    return invalid(errors.harborTaskFiles(dir, (e as Error).message));
  }
}
