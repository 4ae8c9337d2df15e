// Type-checks the unit files before they are loaded (RFT_UNITS_TYPECHECK, on under `npm run dev`): a unit
// reading a field its context lacks (`c.name` of a recorded call, whose field is `tool`) stops the boot with
// RFT_ERR_UNIT_TYPE naming the file and line, where tsx alone would run it and grade with `undefined`.
// The TypeScript compiler API checks the unit files only (what they import is read for its types, never
// reported on), with the project's tsconfig.json when there is one. A passing set of files is remembered
// by the hash of their contents (every file under tools/ and graders/, with TypeScript's version and this
// package's unit types), so a restart with nothing changed costs a hash.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errors } from '../errors.js';

type TypeScript = typeof import('typescript');

export interface TypecheckOptions {
  /** Where passing sets of files are remembered (a folder of the data dir). */
  cacheDir: string;
  /** The unit folders: every file in them (shared `_lib/` code too) keys the cache. */
  dirs: string[];
}

export interface TypecheckResult {
  /** 'checked': compiled now; 'cached': these very files passed before; 'skipped': no TypeScript to check with. */
  outcome: 'checked' | 'cached' | 'skipped';
  files: number;
  ms: number;
}

const here = dirname(fileURLToPath(import.meta.url));
const requireHere = createRequire(import.meta.url);

/** The types a unit's ctx is made of, in a checkout (src/) or compiled (dist/, as .d.ts). */
const CONTEXT_TYPES = ['registry/define', 'store/records', 'sandbox/types', 'protocol/wire'];

/** TypeScript's version, read without loading the compiler (a cached pass never loads it); undefined when absent. */
function typeScriptVersion(): string | undefined {
  try {
    return (JSON.parse(readFileSync(requireHere.resolve('typescript/package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return undefined; // an installed package without TypeScript (a devDependency): nothing to check with
  }
}

function sourcesUnder(dir: string, out: string[] = []): string[] {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) sourcesUnder(p, out);
    else if (/\.(?:[mc]?ts|[mc]?js|json)$/.test(e.name)) out.push(p);
  }
  return out;
}

function cacheKey(version: string, dirs: string[]): string {
  const h = createHash('sha256').update(`typescript ${version}\n`);
  for (const t of CONTEXT_TYPES) {
    for (const ext of ['.ts', '.d.ts']) {
      const p = join(here, '..', t + ext);
      if (existsSync(p)) h.update(`${t}${ext}\n`).update(readFileSync(p));
    }
  }
  for (const file of dirs.flatMap((d) => sourcesUnder(d)).sort()) h.update(`\n${file}\n`).update(readFileSync(file));
  return h.digest('hex');
}

/** This package's @types folder (a checkout's devDependencies), for units outside a project of their own. */
function ownTypeRoots(): string[] {
  try {
    return [dirname(dirname(requireHere.resolve('@types/node/package.json')))];
  } catch {
    return [];
  }
}

function compilerOptions(ts: TypeScript, near: string): import('typescript').CompilerOptions {
  const defaults: import('typescript').CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    customConditions: ['rft-source'],
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    typeRoots: ownTypeRoots(),
    strict: true,
  };
  const configFile = ts.findConfigFile(near, ts.sys.fileExists);
  let options = defaults;
  if (configFile) {
    const read = ts.readConfigFile(configFile, ts.sys.readFile);
    if (!read.error) options = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(configFile)).options;
  }
  // Only the diagnostics of the unit files are read; nothing is written.
  return { ...options, noEmit: true, skipLibCheck: true, declaration: false, sourceMap: false, incremental: false };
}

/** Checks `files`; throws RFT_ERR_UNIT_TYPE for the first file with a type error. */
export async function typecheckUnits(files: string[], opts: TypecheckOptions): Promise<TypecheckResult> {
  const started = performance.now();
  const done = (outcome: TypecheckResult['outcome']): TypecheckResult => ({ outcome, files: files.length, ms: Math.round(performance.now() - started) });
  const units = files.filter((f) => /\.[mc]?ts$/.test(f));
  const version = typeScriptVersion();
  if (version === undefined || units.length === 0) return done('skipped');
  const marker = join(opts.cacheDir, cacheKey(version, opts.dirs).slice(0, 32));
  if (existsSync(marker)) return done('cached');
  const ts = ((await import('typescript')) as { default: TypeScript }).default;

  const program = ts.createProgram({ rootNames: units, options: compilerOptions(ts, dirname(units[0]!)) });
  for (const file of units) {
    const sf = program.getSourceFile(file);
    if (!sf) continue;
    const found = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)].filter((d) => d.category === ts.DiagnosticCategory.Error);
    const first = found[0];
    if (!first) continue;
    const line = first.start === undefined ? 1 : sf.getLineAndCharacterOfPosition(first.start).line + 1;
    const message = `TS${first.code}: ${ts.flattenDiagnosticMessageText(first.messageText, ' ')}`;
    throw errors.unitType(file, line, message, found.length - 1);
  }
  mkdirSync(opts.cacheDir, { recursive: true });
  writeFileSync(marker, `${units.length} unit files passed\n`);
  return done('checked');
}
