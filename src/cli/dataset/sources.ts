// Where `dataset check` takes the tools and the grader from: this folder's units (loaded as `serve`
// loads them, without starting a server) or a running server's GET /v1/tools and /v1/job-config.
import { readFileSync, writeFileSync } from 'node:fs';
import { extname, relative } from 'node:path';
import { loadCliEnv, loadConfig } from '../../config.js';
import { errors, isRftError } from '../../errors.js';
import { defaultGrader, loadRegistry, type Registry } from '../../registry/loader.js';
import { checkDataset, itemPathsOfConfig, MIN_TRAINING_ROWS, renderReport, type GraderNeeds } from './check.js';
import type { ServerOptions } from '../server-options.js';

export interface DatasetCheckOptions extends ServerOptions {
  grader?: string;
  minRows?: string;
  validation?: boolean;
  json?: string;
  config?: string;
}

function minRowsOf(opts: DatasetCheckOptions): number {
  if (opts.validation) return 1;
  if (opts.minRows === undefined) return MIN_TRAINING_ROWS;
  const n = Number(opts.minRows);
  if (!Number.isInteger(n) || n < 1) throw errors.cliUsage(`--min-rows must be a positive integer, got "${opts.minRows}"`);
  return n;
}

function graderNeeds(registry: Registry, name: string): GraderNeeds | undefined {
  const g = registry.graders.get(name);
  if (!g) return undefined;
  const paths = extname(g.file) === '.json' ? itemPathsOfConfig(JSON.parse(readFileSync(g.file, 'utf8'))) : [];
  return { name, paths, ...(g.def.itemSchema ? { schema: g.def.itemSchema } : {}) };
}

interface Sources {
  tools: Map<string, unknown>;
  graderName: string | undefined;
  registry: Registry | undefined;
  label: string;
}

async function fromServer(opts: DatasetCheckOptions, local: () => Promise<Registry>): Promise<Sources> {
  const { clientFrom } = await import('../rollout/http.js');
  const server = clientFrom(opts);
  try {
    const { tools } = await server.json<{ tools: { function: { name: string; parameters?: unknown } }[] }>('GET', '/v1/tools');
    const graderName = opts.grader ?? (await server.json<{ grader?: { name: string } }>('GET', '/v1/job-config')).grader?.name;
    // The grader's needs are read from its definition, so only a local copy of it can tell them.
    let registry: Registry | undefined;
    try {
      registry = await local();
    } catch (e) {
      if (!isRftError(e)) throw e;
    }
    return { tools: new Map(tools.map((t) => [t.function.name, t.function.parameters ?? null])), graderName, registry, label: `tools of ${server.baseUrl}` };
  } finally {
    await server.close();
  }
}

/** Prints the report; true when the dataset has no problem. */
export async function runDatasetCheck(file: string, opts: DatasetCheckOptions): Promise<boolean> {
  const minRows = minRowsOf(opts);
  const config = loadConfig(undefined, { configFile: opts.config });
  const local = () => loadRegistry({ toolsDir: config.toolsDir, gradersDir: config.gradersDir });
  let sources: Sources;
  // --server or RFT_SERVER: the running server's tools, as every other command that talks to one.
  if (opts.server !== undefined || loadCliEnv().RFT_SERVER !== undefined) {
    sources = await fromServer(opts, local);
  } else {
    const registry = await local();
    if (opts.grader !== undefined && !registry.graders.has(opts.grader)) throw errors.unknownGrader(opts.grader, [...registry.graders.keys()]);
    sources = {
      tools: new Map([...registry.tools].map(([name, t]) => [name, t.parameters])),
      graderName: opts.grader ?? defaultGrader(registry, config.defaultGrader),
      registry,
      label: `tools of ${relative(process.cwd(), config.toolsDir) || '.'}/`,
    };
  }
  const grader = sources.graderName && sources.registry ? graderNeeds(sources.registry, sources.graderName) : undefined;
  const graders = sources.registry?.graders.size ?? 0;
  const graderLabel = grader
    ? `grader ${grader.name}`
    : sources.graderName
      ? `grader ${sources.graderName} not found here: its fields unchecked`
      : graders > 1
        ? `${graders} graders and no RFT_DEFAULT_GRADER: their fields unchecked (--grader NAME)`
        : 'no grader';
  const report = checkDataset({ file, tools: sources.tools, minRows, limits: config, ...(grader ? { grader } : {}) });
  process.stdout.write(renderReport(report, `${sources.label}, ${graderLabel}`));
  if (opts.json) writeFileSync(opts.json, JSON.stringify(report, null, 2) + '\n');
  return report.ok;
}
