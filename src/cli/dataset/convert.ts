// `rft-endpoints dataset convert FILE --to nemo-gym|trl|verl|slime|openrlhf`: an Agent RFT dataset as
// the rows another trainer reads, each carrying what this server's door for that trainer grades with
// (nemo-gym-row.ts, trainer-rows.ts). Every row is converted before anything is written, and --out goes
// through a temporary file renamed into place, so a bad line leaves neither a half-written file nor
// half the rows on standard output.
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { errors, isRftError } from '../../errors.js';
import { canonicalSplit, splitOfFile as splitNamed } from '../../environments/dataset.js';
import { readEnvironment } from '../../environments/load.js';
import { forEachJsonLine, readInputFile } from '../files.js';
import { RowProblem, toGymRow, type GymRowOptions } from './nemo-gym-row.js';
import { columnKind, toLabelRow, toTrlRow, toVerlRow, type VerlRow } from './trainer-rows.js';
import { readHarborSource, type HarborSource, type HarborSourceRow } from './harbor-source.js';
import { verlParquet } from './verl-parquet.js';

export const CONVERT_TARGETS = ['nemo-gym', 'trl', 'verl', 'slime', 'openrlhf', 'agent-rft'] as const;
export type ConvertTarget = (typeof CONVERT_TARGETS)[number];

export interface ConvertOptions extends GymRowOptions {
  to: string;
  out?: string;
  /** trl: the environment split the file is (else its file name in an environment's folder tells). */
  split?: string;
  /** verl: the rows' data_source (else the environment's name). */
  dataSource?: string;
  /** `harbor`: FILE is a folder of Harbor tasks (harbor-source.ts). */
  from?: string;
  /** --from harbor: the tools folder whose harness tools the rows carry (default RFT_TOOLS_DIR, else ./tools). */
  toolsDir?: string;
}

/** The environment split a dataset file is: its folder holds a job.json and the file is one of its splits. */
export function splitOfFile(file: string): { environment: string; split: string } | undefined {
  let env;
  try {
    env = readEnvironment(dirname(resolve(file)));
  } catch (e) {
    if (isRftError(e)) return undefined;
    throw e;
  }
  const split = splitNamed(file);
  return env.dataset.splits().includes(split) ? { environment: env.name, split } : undefined;
}

/** Each row of an Agent RFT dataset file through `convert` (its index among the rows); a bad line is RFT_ERR_DATASET naming it. */
export function convertRows<T>(file: string, convert: (row: unknown, index: number, line: number) => T): T[] {
  const rows: T[] = [];
  forEachJsonLine(file, readInputFile(file, 'dataset'), (value, line) => {
    try {
      rows.push(convert(value, rows.length, line));
    } catch (e) {
      if (e instanceof RowProblem) throw errors.dataset(file, line, e.message);
      throw e;
    }
  });
  if (rows.length === 0) throw errors.dataset(file, 0, 'no rows');
  return rows;
}

/** The Gym rows of an Agent RFT dataset file. */
export function convertDataset(file: string, opts: GymRowOptions = {}) {
  return convertRows(file, (row) => toGymRow(row, opts));
}

/**
 * TRL's datasets loader makes each field a column of one type: a field that is text in one row and a
 * number in another is refused at load or silently changed (datasets 5 reads "48.6" and 48.6 both as
 * 48.6), so it stops the conversion here, naming both lines.
 */
function oneKindPerColumn(): (row: Record<string, unknown>, line: number) => void {
  const kinds = new Map<string, { kind: string; line: number }>();
  return (row, line) => {
    for (const [k, v] of Object.entries(row)) {
      const kind = columnKind(v);
      if (kind === undefined) continue;
      const first = kinds.get(k);
      if (!first) kinds.set(k, { kind, line });
      else if (first.kind !== kind) throw new RowProblem(`field "${k}" is ${kind} here and ${first.kind} on line ${first.line}: TRL's loader (datasets) holds one type per column, and changes or refuses the other`);
    }
  };
}

function trlSplit(file: string, opts: ConvertOptions): string {
  if (opts.split !== undefined) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(opts.split)) throw errors.cliUsage(`--split must be a split's name (its file's name without .jsonl), got "${opts.split}"`);
    return canonicalSplit(opts.split);
  }
  const found = splitOfFile(file);
  if (!found) {
    throw errors.cliUsage(
      `--to trl needs --split: the OpenEnv door finds a row by its split and index in the environment's split file, and ${file} is not a split (a *.jsonl of rows) beside a job.json`,
    );
  }
  return found.split;
}

const jsonl = (rows: unknown[]) => ({ bytes: rows.map((r) => JSON.stringify(r)).join('\n') + '\n', rows: rows.length });

/**
 * A Harbor dataset's rows in `target`'s format. Harbor's tests grade the rollout's own container, so
 * only the trainers whose door runs the rollout take them (nemo-gym, trl through OpenEnv, Agent RFT);
 * the reward door's (verl, slime, openrlhf) would grade an answer with no container, and is refused.
 */
function convertHarbor(source: HarborSource, target: ConvertTarget, opts: ConvertOptions): { bytes: Buffer | string; rows: number } {
  if (target === 'verl' || target === 'slime' || target === 'openrlhf') {
    throw errors.cliUsage(
      `--to ${target}: ${target} grades through the reward door, with an answer and no rollout, and a Harbor task's tests run in the rollout's own container: ` +
        'convert to nemo-gym, trl (the OpenEnv door) or agent-rft, or have the trainer call the MCP or ORS door',
    );
  }
  const convert = <T>(f: (r: HarborSourceRow) => T): T[] =>
    source.rows.map((r) => {
      try {
        return f(r);
      } catch (e) {
        if (e instanceof RowProblem) throw errors.dataset(`${source.environment}/${String(r.row.id)}`, 0, e.message);
        throw e;
      }
    });
  switch (target) {
    case 'agent-rft':
      return jsonl(source.rows.map((r) => r.row));
    case 'nemo-gym':
      return jsonl(convert((r) => toGymRow(r.row, opts.agent !== undefined ? { agent: opts.agent } : {})));
    case 'trl':
      // Each row names its own split and index: the OpenEnv door's reset finds it in the Harbor environment's split.
      return jsonl(convert((r) => toTrlRow(r.row, { split: r.split, index: r.index })));
  }
}

/** The converted file's bytes. */
function convertFile(file: string, target: ConvertTarget, opts: ConvertOptions): { bytes: Buffer | string; rows: number } {
  switch (target) {
    case 'agent-rft':
      throw errors.cliUsage('--to agent-rft converts from another format: use it with --from harbor');
    case 'nemo-gym':
      return jsonl(convertDataset(file, opts.agent !== undefined ? { agent: opts.agent } : {}));
    case 'slime':
    case 'openrlhf':
      return jsonl(convertRows(file, (row) => toLabelRow(row, target === 'slime' ? 'slime' : 'OpenRLHF')));
    case 'trl': {
      const split = trlSplit(file, opts);
      const check = oneKindPerColumn();
      return jsonl(
        convertRows(file, (row, index, line) => {
          const r = toTrlRow(row, { split, index });
          check(r, line);
          return r;
        }),
      );
    }
    case 'verl': {
      const dataSource = opts.dataSource ?? splitOfFile(file)?.environment ?? 'rft-endpoints';
      const rows: VerlRow[] = convertRows(file, (row, index) => toVerlRow(row, { dataSource, index }));
      return { bytes: verlParquet(rows), rows: rows.length };
    }
  }
}

/** Writes `bytes` to `path` whole or not at all: a temporary sibling renamed over it. */
function writeWhole(path: string, bytes: Buffer | string): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, bytes);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

export async function runDatasetConvert(file: string, opts: ConvertOptions): Promise<void> {
  if (!(CONVERT_TARGETS as readonly string[]).includes(opts.to)) throw errors.cliUsage(`--to must be one of ${CONVERT_TARGETS.join(', ')}, got "${opts.to}"`);
  if (opts.from !== undefined && opts.from !== 'harbor') throw errors.cliUsage(`--from must be harbor (a folder of Harbor tasks), got "${opts.from}"`);
  if (opts.from === undefined && opts.toolsDir !== undefined) throw errors.cliUsage('--tools-dir applies to --from harbor only');
  if (opts.from === 'harbor' && opts.split !== undefined) throw errors.cliUsage('--split: a Harbor dataset\'s rows carry their own splits (its folders or listing)');
  const target = opts.to as ConvertTarget;
  const only = (flag: string, value: unknown, owner: ConvertTarget) => {
    if (value !== undefined && target !== owner) throw errors.cliUsage(`${flag} applies to --to ${owner} only`);
  };
  only('--agent', opts.agent, 'nemo-gym');
  only('--split', opts.split, 'trl');
  only('--data-source', opts.dataSource, 'verl');
  if (target === 'verl' && opts.out === undefined) throw errors.cliUsage('--to verl writes parquet: name the file with --out');
  let converted: { bytes: Buffer | string; rows: number };
  if (opts.from === 'harbor') {
    const source = await readHarborSource(file, opts.toolsDir ?? process.env.RFT_TOOLS_DIR ?? 'tools');
    // Every task that is not one is named with its reason, never dropped silently.
    for (const bad of source.invalid) process.stderr.write(`${bad.code}: ${bad.reason}\n`);
    converted = convertHarbor(source, target, opts);
  } else {
    converted = convertFile(file, target, opts);
  }
  const { bytes, rows } = converted;
  if (opts.out === undefined) {
    process.stdout.write(bytes);
    return;
  }
  writeWhole(opts.out, bytes);
  process.stderr.write(`${file}: ${rows} rows converted to ${opts.to} in ${opts.out}\n`);
}
