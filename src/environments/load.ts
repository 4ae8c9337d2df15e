// Finds the environments at boot: a folder with a job.json (the Agent RFT job) is one, named after the
// folder; every *.jsonl in it is a split (dataset.ts). Each configured folder is an environment itself
// (an init'ed project) or holds them (this repository's examples/).
//
// The project (the folder whose tools/ or graders/ the server loaded) serves what it has: without
// tools or a grader in its job.json, every tool the server loaded and its default grader, as
// `job body` and /v1/job-config answer. A job.json that names them is an explicit choice, and one
// naming a unit the server did not load stops the boot (RFT_ERR_JOB_UNITS): never a silent drop.
// Any other environment names its units in its job.json and is left out when the server lacks one:
// quietly when its folder has units of its own (tools/ or graders/, as this repository's
// examples/blank and examples/python), with a warning otherwise; and so is one whose job.json cannot
// be read or whose name was taken: Agent RFT needs none of them.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { errors } from '../errors.js';
import { defaultGrader, type LoadedGrader, type Registry } from '../registry/loader.js';
import { HARBOR_TOOLS, isHarborDataset } from '../harbor/dataset.js';
import { HARBOR_GRADER, harborEnvironment } from '../harbor/environment.js';
import { HarborTasks } from '../harbor/registry.js';
import { Dataset } from './dataset.js';
import { Environments, type Environment } from './environment.js';

const jobSchema = z.looseObject({
  method: z
    .looseObject({
      reinforcement: z
        .looseObject({
          tools: z.array(z.looseObject({ name: z.string() })).optional(),
          grader: z.looseObject({ name: z.string().optional(), url: z.string().optional() }).optional(),
        })
        .optional(),
    })
    .optional(),
});

/** What a job.json names: its tools and grader, each undefined when it names none. */
export interface JobUnits {
  file: string;
  tools: string[] | undefined;
  grader: string | undefined;
}

/** The grader a job's endpoint grader reaches: /graders/{name} by its URL, else its name. */
function graderOf(grader: { name?: string | undefined; url?: string | undefined } | undefined): string | undefined {
  const path = grader?.url?.match(/\/graders\/([A-Za-z0-9_-]+)\/?$/);
  return path?.[1] ?? grader?.name;
}

export function readJobUnits(dir: string): JobUnits {
  const file = join(dir, 'job.json');
  let job;
  try {
    job = jobSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (e) {
    throw errors.environmentLoad(dir, `job.json: ${(e as Error).message}`);
  }
  const r = job.method?.reinforcement;
  const tools = r?.tools?.length ? r.tools.map((t) => t.name) : undefined;
  return { file, tools, grader: graderOf(r?.grader) };
}

function environment(dir: string, tools: readonly string[], grader: string, log: Logger | undefined): Environment {
  const name = basename(dir);
  return { name, dir, tools, grader, dataset: new Dataset(name, dir, log) };
}

/** An environment that names its own units; throws RFT_ERR_ENVIRONMENT_LOAD when its job.json names no grader. */
export function readEnvironment(dir: string, log?: Logger): Environment {
  const job = readJobUnits(dir);
  if (!job.grader) throw errors.environmentLoad(dir, 'job.json names no grader');
  return environment(dir, job.tools ?? [], job.grader, log);
}

export interface ProjectOptions {
  /** Folders whose tools/ or graders/ the server loaded (the parents of RFT_TOOLS_DIR and RFT_GRADERS_DIR). */
  dirs: readonly string[];
  /** RFT_DEFAULT_GRADER. */
  defaultGrader?: string | undefined;
}

/** The project's environment: its job.json's units, checked, else the server's (undefined: it has no grader to serve). */
function projectEnvironment(dir: string, registry: Registry, opts: ProjectOptions, log: Logger | undefined): Environment | undefined {
  const job = readJobUnits(dir);
  const loaded = { tools: [...registry.tools.keys()], graders: [...registry.graders.keys()] };
  const missing = {
    tools: (job.tools ?? []).filter((t) => !registry.tools.has(t)),
    graders: job.grader !== undefined && !registry.graders.has(job.grader) ? [job.grader] : [],
  };
  if (missing.tools.length + missing.graders.length > 0) throw errors.jobUnits(job.file, missing, loaded);
  const grader = job.grader ?? defaultGrader(registry, opts.defaultGrader);
  if (grader === undefined) {
    if (registry.graders.size > 0) throw errors.noDefaultGrader(loaded.graders);
    log?.warn({ dir }, 'environment left out: the server loaded no grader for it');
    return undefined;
  }
  const tools = job.tools ?? loaded.tools;
  const unlisted = loaded.tools.filter((t) => !tools.includes(t));
  if (unlisted.length > 0) log?.warn({ file: job.file, unlisted }, "tools the server loaded that job.json does not name: the environment's doors do not offer them");
  return environment(dir, tools, grader, log);
}

const hasJob = (dir: string) => existsSync(join(dir, 'job.json'));

function subfolders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .map((e) => join(dir, e.name));
}

/** A folder of Harbor tasks, and not a folder that holds environments (examples/ holds one of them). */
function isHarborEnvironment(dir: string): boolean {
  return !hasJob(dir) && isHarborDataset(dir) && !subfolders(dir).some(hasJob);
}

function candidates(dir: string): string[] {
  if (!existsSync(dir)) return [];
  if (hasJob(dir) || isHarborEnvironment(dir)) return [dir];
  return subfolders(dir)
    .filter((c) => hasJob(c) || isHarborEnvironment(c))
    .sort();
}

/** What a Harbor environment needs from the server: where its tasks are registered, and its grader (src/harbor/grader.ts). */
export interface HarborOptions {
  tasks: HarborTasks;
  /** The built-in harbor grader, registered when a Harbor environment is found and the registry has none. */
  grader?: () => LoadedGrader;
}

export function loadEnvironments(dirs: readonly string[], registry: Registry, log?: Logger, project?: ProjectOptions, harbor: HarborOptions = { tasks: new HarborTasks() }): Environments {
  const projectDirs = new Set((project?.dirs ?? []).map((d) => resolve(d)));
  const found = new Map<string, Environment>();
  let harborFound = false;
  for (const dir of [...new Set(dirs.flatMap(candidates))]) {
    let env: Environment | undefined;
    if (!existsSync(join(dir, 'job.json'))) {
      const name = basename(dir);
      if (found.has(name)) {
        log?.warn({ environment: name, dirs: [found.get(name)!.dir, dir] }, 'environment left out: another of that name was found first');
        continue;
      }
      const missing = [...HARBOR_TOOLS.filter((t) => !registry.tools.has(t)), ...(registry.graders.has(HARBOR_GRADER) || harbor.grader ? [] : [HARBOR_GRADER])];
      if (missing.length > 0) {
        log?.warn({ environment: name, dir, missing }, 'Harbor environment left out: the server has none of these units (the harness tools of tools/, the harbor grader of graders/)');
        continue;
      }
      found.set(name, harborEnvironment(name, dir, registry, harbor.tasks, log));
      harborFound = true;
      continue;
    }
    if (project && projectDirs.has(resolve(dir))) {
      // The project's own job.json: what is wrong with it stops the boot (as /v1/job-config's reading of it does).
      env = projectEnvironment(dir, registry, project, log);
      if (!env) continue;
    } else {
      try {
        env = readEnvironment(dir, log);
      } catch (e) {
        // Agent RFT names no environment: a job.json this loader cannot read must not stop its server.
        log?.warn({ err: e, dir }, 'environment left out: its job.json cannot be read');
        continue;
      }
      const missing = [...env.tools.filter((t) => !registry.tools.has(t)), ...(registry.graders.has(env.grader) ? [] : [env.grader])];
      if (missing.length > 0) {
        // A project of its own (its units beside its job.json) is served from its folder, not by this server: no warning.
        const ownUnits = ['tools', 'graders'].some((d) => existsSync(join(dir, d)));
        if (ownUnits) log?.debug({ environment: env.name, dir, missing }, 'environment left out: its units are its own, not loaded by this server');
        else log?.warn({ environment: env.name, dir, missing }, 'environment left out: the server has none of these units');
        continue;
      }
    }
    const prev = found.get(env.name);
    if (prev) {
      log?.warn({ environment: env.name, dirs: [prev.dir, dir] }, 'environment left out: another of that name was found first');
      continue;
    }
    found.set(env.name, env);
  }
  // After the loop: the project's default grader (the only one of its graders/) is chosen without it.
  if (harborFound && harbor.grader && !registry.graders.has(HARBOR_GRADER)) registry.graders.set(HARBOR_GRADER, harbor.grader());
  return new Environments([...found.values()]);
}
