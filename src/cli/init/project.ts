// Writes a new project folder from one of EXAMPLES. Everything is written into a temporary sibling
// folder first and renamed into place at the end, so a failure leaves no half-written project.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errors } from '../../errors.js';
import { EXAMPLES, isExampleName, type ExampleName, type ExampleSpec } from './examples.js';
import { HARBOR_EXAMPLE, writeHarborProject } from './harbor.js';
import { projectFiles } from './templates.js';
import type { ChatToolSpec } from './openenv.js';

export interface InitOptions {
  dir: string;
  example: string;
  /** The project's dependency on this package; default: this copy (see defaultPackageSpec). */
  packageSpec?: string;
}

export interface InitResult {
  dir: string;
  example: ExampleName | typeof HARBOR_EXAMPLE;
  files: number;
  dependency: string;
}

interface PackageJson {
  name: string;
  version: string;
}

/** This package's root folder (where its package.json is), in a checkout, in dist/ or installed. */
export function packageRoot(): string {
  return dirname(fileURLToPath(import.meta.resolve('rft-endpoints/package.json')));
}

/**
 * A checkout (src/ beside package.json) is linked as a folder, so the project runs this very copy
 * from its TypeScript source; an installed package is depended on by version.
 */
export function defaultPackageSpec(root: string, version: string): string {
  return existsSync(join(root, 'src', 'cli', 'main.ts')) ? `file:${root}` : `^${version}`;
}

// import ... from './x.js', export ... from '../y.js', import('./z.js'), import './side.js'
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g;

/** A unit and every module it imports relatively, as paths relative to the package root. */
export function importClosure(root: string, entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(join(root, file), 'utf8');
    for (const m of source.matchAll(RELATIVE_IMPORT)) {
      const target = posix.normalize(posix.join(posix.dirname(file), m[2]!));
      const ts = target.replace(/\.js$/, '.ts');
      if (existsSync(join(root, ts))) visit(ts);
      else if (existsSync(join(root, target))) visit(target);
      else throw errors.internal(`${file} imports ${m[2]}, which is not in the package`);
    }
  };
  visit(entry);
  return [...seen];
}

function checkTarget(dir: string): void {
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory()) throw errors.initTarget(dir, 'a file of that name exists');
  if (readdirSync(dir).length > 0) throw errors.initTarget(dir, 'the folder is not empty');
}

function copyExample(root: string, spec: ExampleSpec, into: string): number {
  let files = 0;
  const put = (from: string, to: string) => {
    mkdirSync(dirname(join(into, to)), { recursive: true });
    cpSync(join(root, from), join(into, to), { recursive: true });
    files++;
  };
  for (const [from, to] of spec.units) {
    // A unit's own modules keep their place relative to it.
    for (const file of importClosure(root, from)) put(file, posix.join(posix.dirname(to), posix.relative(posix.dirname(from), file)));
  }
  for (const asset of spec.assets) put(asset, asset);
  for (const [from, to] of spec.python?.files ?? []) put(from, to);
  for (const [from, to] of spec.datasets) put(from, to);
  put(spec.job, 'job.json');
  put(spec.script, 'scripted.jsonl');
  return files;
}

interface JobBody {
  suffix?: unknown;
  method?: { reinforcement?: { tools?: unknown; grader?: Record<string, unknown> } };
}

/**
 * The project's job.json: the example's settings, named after the project, naming no units. The job's
 * `suffix` (the fine-tuned model's name part) becomes the project's name: the example's own ("prices"
 * of the blank one) would otherwise name every model trained from a project built on it. Its tools and
 * grader are left out: the server serves the project's tools/ and graders/ (src/environments/load.ts)
 * and `job body` puts them in the request, so replacing a unit needs no edit here; naming them again
 * in job.json is a choice the server checks at boot (RFT_ERR_JOB_UNITS).
 */
function projectJob(file: string, project: string): void {
  const job = JSON.parse(readFileSync(file, 'utf8')) as JobBody;
  job.suffix = project.toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64) || 'rft-project';
  const r = job.method?.reinforcement;
  if (r) {
    delete r.tools;
    if (r.grader) for (const k of ['name', 'url', 'headers']) delete r.grader[k];
  }
  writeFileSync(file, `${JSON.stringify(job, null, 2)}\n`);
}

/** The job's max_episode_steps, which the NeMo Gym config gives simple_agent as max_steps. */
function maxEpisodeSteps(root: string, spec: ExampleSpec): number {
  const job = JSON.parse(readFileSync(join(root, spec.job), 'utf8')) as { method?: { reinforcement?: { max_episode_steps?: unknown } } };
  const steps = job.method?.reinforcement?.max_episode_steps;
  if (typeof steps !== 'number') throw errors.internal(`${spec.job} has no method.reinforcement.max_episode_steps`);
  return steps;
}

/** The tools the project's train.jsonl rows list (Chat Completions format), each once, in order of appearance. */
function datasetTools(dir: string): ChatToolSpec[] {
  const file = join(dir, 'train.jsonl');
  if (!existsSync(file)) return [];
  const seen = new Map<string, ChatToolSpec>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const row = JSON.parse(line) as { tools?: { function?: ChatToolSpec }[] };
    for (const t of row.tools ?? []) if (t.function?.name && !seen.has(t.function.name)) seen.set(t.function.name, t.function);
  }
  return [...seen.values()];
}

export function initProject(opts: InitOptions): InitResult {
  const harbor = opts.example === HARBOR_EXAMPLE;
  if (!isExampleName(opts.example) && !harbor) throw errors.cliUsage(`--example must be one of ${[...Object.keys(EXAMPLES), HARBOR_EXAMPLE].join(', ')}, got "${opts.example}"`);
  const dir = resolve(opts.dir);
  checkTarget(dir);
  const root = packageRoot();
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;
  const dependency = opts.packageSpec ?? defaultPackageSpec(root, pkg.version);
  mkdirSync(dirname(dir), { recursive: true });
  const staging = join(dirname(dir), `.${basename(dir)}.init-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  try {
    if (harbor) {
      // A folder of Harbor tasks: no job.json, dataset or units of its own but the harness (init/harbor.ts).
      const files = writeHarborProject(root, staging, basename(dir), dependency, importClosure);
      if (existsSync(dir)) rmSync(dir, { recursive: true }); // empty, checked above
      renameSync(staging, dir);
      return { dir: relative(process.cwd(), dir) || '.', example: HARBOR_EXAMPLE, files, dependency };
    }
    const spec = EXAMPLES[opts.example as ExampleName];
    let files = copyExample(root, spec, staging);
    projectJob(join(staging, 'job.json'), basename(dir));
    const texts = projectFiles({ name: basename(dir), dir, example: opts.example as ExampleName, spec, dependency, maxSteps: maxEpisodeSteps(root, spec), tools: datasetTools(staging) });
    for (const [name, text] of Object.entries(texts)) {
      mkdirSync(dirname(join(staging, name)), { recursive: true });
      writeFileSync(join(staging, name), text);
      files++;
    }
    if (existsSync(dir)) rmSync(dir, { recursive: true }); // empty, checked above
    renameSync(staging, dir);
    return { dir: relative(process.cwd(), dir) || '.', example: opts.example as ExampleName, files, dependency };
  } catch (e) {
    rmSync(staging, { recursive: true, force: true });
    throw e;
  }
}
