// `rft-endpoints dataset convert FILE --to nemo-gym`: an Agent RFT dataset as the rows NeMo Gym's
// ng_collect_rollouts (and NeMo RL, verl's recipe...) read. Every row is converted before anything
// is written, and --out goes through a temporary file renamed into place, so a bad line leaves
// neither a half-written file nor half the rows on standard output.
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { errors } from '../../errors.js';
import { forEachJsonLine, readInputFile } from '../files.js';
import { RowProblem, toGymRow, type GymRow, type GymRowOptions } from './nemo-gym-row.js';

export const CONVERT_TARGETS = ['nemo-gym'] as const;

export interface ConvertOptions extends GymRowOptions {
  to: string;
  out?: string;
}

/** The Gym rows of an Agent RFT dataset file; a bad line is RFT_ERR_DATASET naming it. */
export function convertDataset(file: string, opts: GymRowOptions = {}): GymRow[] {
  const rows: GymRow[] = [];
  forEachJsonLine(file, readInputFile(file, 'dataset'), (value, line) => {
    try {
      rows.push(toGymRow(value, opts));
    } catch (e) {
      if (e instanceof RowProblem) throw errors.dataset(file, line, e.message);
      throw e;
    }
  });
  if (rows.length === 0) throw errors.dataset(file, 0, 'no rows');
  return rows;
}

/** Writes `text` to `path` whole or not at all: a temporary sibling renamed over it. */
function writeWhole(path: string, text: string): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

export function runDatasetConvert(file: string, opts: ConvertOptions): void {
  if (!(CONVERT_TARGETS as readonly string[]).includes(opts.to)) throw errors.cliUsage(`--to must be one of ${CONVERT_TARGETS.join(', ')}, got "${opts.to}"`);
  const rows = convertDataset(file, opts.agent !== undefined ? { agent: opts.agent } : {});
  const text = rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  if (opts.out === undefined) {
    process.stdout.write(text);
    return;
  }
  writeWhole(opts.out, text);
  process.stderr.write(`${file}: ${rows.length} rows converted to ${opts.to} in ${opts.out}\n`);
}
