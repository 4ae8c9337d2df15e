// Finds the environments at boot: a folder with a job.json (the Agent RFT job: its tools and grader)
// is one, named after the folder; its train.jsonl and valid.jsonl (or validation.jsonl) are its
// splits. Each configured folder is an environment itself (an init'ed project) or holds them
// (this repository's examples/). An environment naming a tool or grader the server did not load
// is left out: quietly when its folder has units of its own (tools/ or graders/, as this
// repository's examples/blank and examples/python: a project that serves them from its own folder),
// with a warning otherwise; and so is one whose job.json cannot be read or whose name was taken:
// Agent RFT needs none of them.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { errors } from '../errors.js';
import type { Registry } from '../registry/loader.js';
import { Environments, type Environment, type SplitName } from './environment.js';

const jobSchema = z.looseObject({
  method: z.looseObject({
    reinforcement: z.looseObject({
      tools: z.array(z.looseObject({ name: z.string() })).default([]),
      grader: z.looseObject({ name: z.string().optional(), url: z.string().optional() }),
    }),
  }),
});

const SPLIT_FILES: [SplitName, string[]][] = [
  ['train', ['train.jsonl']],
  ['validation', ['valid.jsonl', 'validation.jsonl']],
];

/** The grader a job's endpoint grader reaches: /graders/{name} by its URL, else its name. */
function graderOf(grader: { name?: string | undefined; url?: string | undefined }): string | undefined {
  const path = grader.url?.match(/\/graders\/([A-Za-z0-9_-]+)\/?$/);
  return path?.[1] ?? grader.name;
}

export function readEnvironment(dir: string): Environment {
  const file = join(dir, 'job.json');
  let job;
  try {
    job = jobSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (e) {
    throw errors.environmentLoad(dir, `job.json: ${(e as Error).message}`);
  }
  const { tools, grader } = job.method.reinforcement;
  const graderName = graderOf(grader);
  if (!graderName) throw errors.environmentLoad(dir, 'job.json names no grader');
  const splits: Environment['splits'] = {};
  for (const [split, names] of SPLIT_FILES) {
    const found = names.map((n) => join(dir, n)).find((p) => existsSync(p));
    if (found) splits[split] = found;
  }
  return { name: basename(dir), dir, tools: tools.map((t) => t.name), grader: graderName, splits };
}

function candidates(dir: string): string[] {
  if (!existsSync(dir)) return [];
  if (existsSync(join(dir, 'job.json'))) return [dir];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(dir, e.name, 'job.json')))
    .map((e) => join(dir, e.name))
    .sort();
}

export function loadEnvironments(dirs: readonly string[], registry: Registry, log?: Logger): Environments {
  const found = new Map<string, Environment>();
  for (const dir of [...new Set(dirs.flatMap(candidates))]) {
    let env: Environment;
    try {
      env = readEnvironment(dir);
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
    const prev = found.get(env.name);
    if (prev) {
      log?.warn({ environment: env.name, dirs: [prev.dir, dir] }, 'environment left out: another of that name was found first');
      continue;
    }
    found.set(env.name, env);
  }
  return new Environments([...found.values()]);
}
