// Loads user units at boot: one tool per file in tools/, one grader per file in graders/
// (TypeScript/JavaScript defineGrader files, OpenAI grader JSON, or a Python file defining
// grade(sample, item), run as OpenAI's `python` grader type). tools/*.py are FastMCP servers the MCP
// bridge serves (pythonToolFiles; mcp/config.ts pythonToolServers). Any bad file stops the boot
// with a message naming it; nothing is loaded lazily at request time.
import { readdir, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { errors } from '../errors.js';
import { sha256 } from '../protocol/canonical.js';
import { isValidUnitName, type GraderDefinition, type ToolDefinition } from './define.js';
import { graderFromConfig, validateGraderConfig } from '../grading/index.js';
import { checkPythonSource } from '../grading/python.js';
import { typecheckUnits, type TypecheckResult } from './typecheck.js';

export interface LoadedTool {
  def: ToolDefinition;
  file: string;
  /** JSON Schema of the parameters, as the dataset row's `tools[].function.parameters`. */
  parameters: Record<string, unknown>;
}

export interface LoadedGrader {
  def: GraderDefinition;
  file: string;
  version: string;
  range: [number, number];
  /**
   * It reads the rollout's tool calls: as declared (`readsCalls`), else when its file calls `.calls(` outside
   * comments (a grader that forgot to declare it is still never graded on a door without calls).
   */
  readsCalls?: boolean;
  /** Built into the server (the harbor grader, registered with a Harbor environment), not a unit of graders/. */
  builtIn?: boolean;
}

/** Whether a grader's source calls `.calls(` (ctx.rollout.calls()) in code, comments left out. */
export function sourceReadsCalls(source: string): boolean {
  return /\.\s*calls\s*\(/.test(source.replace(/\/\*[\s\S]*?\*\/|(^|[^:])\/\/.*$/gm, '$1'));
}

export interface Registry {
  tools: Map<string, LoadedTool>;
  graders: Map<string, LoadedGrader>;
  /** What the type check before loading did (RFT_UNITS_TYPECHECK), when it ran. */
  typecheck?: TypecheckResult;
}

const CODE_EXT = new Set(['.ts', '.js', '.mjs', '.mts']);

/** Besides code: `.json` (OpenAI grader configs) and `.py` (Python graders) in graders/, `.py` alone for tools/*.py. */
function isUnitFile(name: string, also: readonly string[], code = true): boolean {
  if (name.startsWith('_') || name.startsWith('.')) return false;
  if (name.endsWith('.d.ts') || /\.test\.[mc]?[jt]s$/.test(name) || /\.spec\.[mc]?[jt]s$/.test(name)) return false;
  if (/^test_.*\.py$|_test\.py$/.test(name)) return false;
  const ext = extname(name);
  return (code && CODE_EXT.has(ext)) || also.includes(ext);
}

async function listUnits(dir: string, also: readonly string[], code = true): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && isUnitFile(e.name, also, code))
    .map((e) => join(dir, e.name))
    .sort();
}

/** The Python tool files of tools/ (each a FastMCP server the MCP bridge serves), absolute, sorted. */
export function pythonToolFiles(toolsDir: string): Promise<string[]> {
  return listUnits(resolve(toolsDir), ['.py'], false);
}

let typeScript: Promise<void> | undefined;

/**
 * Units may be TypeScript while the server runs compiled (an init'ed project's tools/*.ts served by
 * the installed package's dist/): tsx's loader is registered then, once. A server running from its
 * own .ts sources (tsx, vitest) already loads TypeScript.
 */
function loadsTypeScript(file: string): Promise<void> {
  if (!/\.[mc]?ts$/.test(file) || import.meta.url.endsWith('.ts')) return Promise.resolve();
  return (typeScript ??= import('tsx/esm/api').then(({ register }) => {
    register();
  }));
}

async function importDefault(file: string): Promise<unknown> {
  try {
    await loadsTypeScript(file);
    const mod = (await import(pathToFileURL(file).href)) as { default?: unknown };
    if (mod.default === undefined) throw new Error('has no default export (export default defineTool(...) / defineGrader(...))');
    return mod.default;
  } catch (e) {
    throw errors.unitLoad(file, (e as Error).message);
  }
}

function isZodSchema(v: unknown): v is z.ZodType {
  return !!v && typeof v === 'object' && typeof (v as { safeParse?: unknown }).safeParse === 'function';
}

export function checkTool(file: string, v: unknown): LoadedTool {
  const d = v as Partial<ToolDefinition> | null;
  const fail = (why: string) => errors.unitLoad(file, why);
  if (!d || typeof d !== 'object') throw fail('default export is not a tool definition');
  if (!isValidUnitName(d.name)) throw fail(`tool name must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(d.name)}`);
  if (typeof d.description !== 'string' || !d.description.trim()) throw fail(`tool "${d.name}" needs a description`);
  if (typeof d.handler !== 'function') throw fail(`tool "${d.name}" needs a handler function`);
  if (!isZodSchema(d.parameters)) throw fail(`tool "${d.name}": parameters must be a zod schema (z.object({...}))`);
  for (const [k, min] of [['cost', 0], ['timeoutMs', 1], ['maxOutputBytes', 64]] as const) {
    const n = d[k];
    if (n !== undefined && (!Number.isInteger(n) || n < min)) throw fail(`tool "${d.name}": ${k} must be an integer >= ${min}`);
  }
  let parameters: Record<string, unknown>;
  try {
    parameters = z.toJSONSchema(d.parameters, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
  } catch (e) {
    throw fail(`tool "${d.name}": parameters cannot be expressed as JSON Schema: ${(e as Error).message}`);
  }
  if (parameters.type !== 'object') throw fail(`tool "${d.name}": parameters must be an object schema`);
  delete parameters.$schema;
  return { def: d as ToolDefinition, file, parameters };
}

export function checkGrader(file: string, v: unknown, source: string): LoadedGrader {
  const d = v as Partial<GraderDefinition> | null;
  const fail = (why: string) => errors.unitLoad(file, why);
  if (!d || typeof d !== 'object') throw fail('default export is not a grader definition');
  if (!isValidUnitName(d.name)) throw fail(`grader name must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(d.name)}`);
  if (typeof d.handler !== 'function') throw fail(`grader "${d.name}" needs a handler function`);
  const range = d.range ?? [0, 1];
  if (!Array.isArray(range) || range.length !== 2 || !range.every(Number.isFinite) || range[0] >= range[1]) {
    throw fail(`grader "${d.name}": range must be [min, max] with min < max`);
  }
  if (d.version !== undefined && (typeof d.version !== 'string' || !d.version)) throw fail(`grader "${d.name}": version must be a non-empty string`);
  if (d.readsCalls !== undefined && typeof d.readsCalls !== 'boolean') throw fail(`grader "${d.name}": readsCalls must be true or false`);
  if (d.itemSchema !== undefined && !isZodSchema(d.itemSchema)) throw fail(`grader "${d.name}": itemSchema must be a zod schema (z.looseObject({...}))`);
  const readsCalls = d.readsCalls ?? sourceReadsCalls(source);
  return { def: d as GraderDefinition, file, version: d.version ?? sha256(source).slice(0, 12), range: [range[0], range[1]], ...(readsCalls ? { readsCalls } : {}) };
}

export interface LoadOptions {
  toolsDir: string;
  gradersDir: string;
  /** Options handed to JSON (OpenAI config) graders, e.g. the model API for score_model. */
  jsonGraderOptions?: Parameters<typeof graderFromConfig>[1];
  /** Type-check the TypeScript units before importing them (RFT_UNITS_TYPECHECK), remembering passes in the data dir. */
  typecheck?: { dataDir: string } | undefined;
}

/**
 * graders/NAME.py: OpenAI's `python` grader with the file as its `source`, named by the file's stem,
 * so it runs exactly as that config would (python.ts: the same sandbox, limits and time limit).
 */
function pythonGrader(file: string, source: string, opts: LoadOptions): LoadedGrader {
  const bad = checkPythonSource(file, source);
  if (bad) throw errors.unitLoad(file, bad.line === null ? bad.error : `line ${bad.line}: ${bad.error}`);
  const name = basename(file, '.py');
  try {
    const def = graderFromConfig(validateGraderConfig({ type: 'python', name, source }), opts.jsonGraderOptions ?? {});
    return checkGrader(file, { ...def, name }, source);
  } catch (e) {
    throw errors.unitLoad(file, (e as Error).message);
  }
}

export async function loadRegistry(opts: LoadOptions): Promise<Registry> {
  const tools = new Map<string, LoadedTool>();
  const graders = new Map<string, LoadedGrader>();
  const toolFiles = await listUnits(resolve(opts.toolsDir), []);
  const graderFiles = await listUnits(resolve(opts.gradersDir), ['.json', '.py']);
  const typecheck = opts.typecheck
    ? await typecheckUnits([...toolFiles, ...graderFiles], { cacheDir: join(opts.typecheck.dataDir, 'units-typecheck'), dirs: [resolve(opts.toolsDir), resolve(opts.gradersDir)] })
    : undefined;

  for (const file of toolFiles) {
    const t = checkTool(file, await importDefault(file));
    const prev = tools.get(t.def.name);
    if (prev) throw errors.unitDuplicate('tool', t.def.name, [prev.file, file]);
    tools.set(t.def.name, t);
  }

  for (const file of graderFiles) {
    const source = await readFile(file, 'utf8');
    let g: LoadedGrader;
    if (extname(file) === '.py') {
      g = pythonGrader(file, source, opts);
    } else if (extname(file) === '.json') {
      let json: unknown;
      try {
        json = JSON.parse(source);
        const config = validateGraderConfig(json);
        const def = graderFromConfig(config, opts.jsonGraderOptions ?? {});
        // A JSON grader is served under its file name: OpenAI config names are free text. It reads no tool calls.
        g = checkGrader(file, { ...def, name: basename(file, '.json'), readsCalls: false }, source);
      } catch (e) {
        throw errors.unitLoad(file, (e as Error).message);
      }
    } else {
      g = checkGrader(file, await importDefault(file), source);
    }
    const prev = graders.get(g.def.name);
    if (prev) throw errors.unitDuplicate('grader', g.def.name, [prev.file, file]);
    graders.set(g.def.name, g);
  }
  return { tools, graders, ...(typecheck ? { typecheck } : {}) };
}

/** The grader behind POST /grade: the configured one, else the only one, else answer_match when present. */
export function defaultGrader(reg: Registry, configured: string | undefined): string | undefined {
  if (configured) return configured;
  // A built-in grader serves its own environment's rows, never the project's: it is no default.
  const own = [...reg.graders.values()].filter((g) => !g.builtIn);
  if (own.length === 1) return own[0]!.def.name;
  return reg.graders.has('answer_match') ? 'answer_match' : undefined;
}

/** The Chat Completions `tools` array a dataset row carries (all the tools, or the named ones in that order). */
export function chatCompletionsTools(reg: Registry, names?: readonly string[]): unknown[] {
  const tools = names ? names.flatMap((n) => reg.tools.get(n) ?? []) : [...reg.tools.values()];
  return tools.map((t) => ({
    type: 'function',
    function: { name: t.def.name, description: t.def.description, parameters: t.parameters },
  }));
}
