// An environment's dataset: every *.jsonl in its folder is a split named after its file (train.jsonl
// is `train`, hard.jsonl is `hard`; valid.jsonl is `validation`, ORS's name), except the project's
// files that are not rows: scripted.jsonl (scripted model turns) and *.gym.jsonl (NeMo Gym's input
// made from the rows). The folder is listed and each file stat'ed on every read, so a split added or
// edited while the server runs is served without a restart. A file is parsed whole before its rows
// replace the previous ones: one being written (changed during the read, or changed within the last
// SETTLE_MS), or one that does not parse, keeps the rows last read and logs RFT_ERR_ENVIRONMENT_LOAD.
// A file that never held rows (a rollout's results, say) is no split: it is logged once and not listed.
// Files are read synchronously: a split is parsed whole either way, and only when it changed.
import { readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { errors, type RftError } from '../errors.js';

export type Row = Record<string, unknown>;

/** A file younger than this may still be being written: the previous rows are served until it settles. */
export const SETTLE_MS = 200;

const NOT_ROWS = [/^scripted\.jsonl$/, /\.gym\.jsonl$/, /^\./];

/** The split a file serves; `valid` is `validation`, the name ORS and the docs use. */
export function splitOfFile(file: string): string {
  const name = basename(file, '.jsonl');
  return name === 'valid' ? 'validation' : name;
}

/** A split's name as a caller may spell it: `valid` for `validation`. */
export function canonicalSplit(split: string): string {
  return split === 'valid' ? 'validation' : split;
}

/** train first, validation next, then the rest by name. */
const ORDER = (s: string) => (s === 'train' ? 0 : s === 'validation' ? 1 : 2);

function versionOf(s: Stats): string {
  return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
}

export function parseRows(file: string, text: string): Row[] {
  return text.split('\n').flatMap((line, i) => {
    if (!line.trim()) return [];
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch (e) {
      throw new Error(`${file} line ${i + 1}: ${(e as Error).message}`);
    }
    if (!row || typeof row !== 'object' || Array.isArray(row)) throw new Error(`${file} line ${i + 1}: a row must be a JSON object`);
    if (!Array.isArray((row as Row).messages)) throw new Error(`${file} line ${i + 1}: a row must have a "messages" array`);
    return [row as Row];
  });
}

interface Loaded {
  /** The file version these rows were read from. */
  version: string;
  rows: Row[];
}

export class Dataset {
  private readonly loaded = new Map<string, Loaded>();
  /** Each file last found bad, its version and why, so a bad file is logged once, not on every read. */
  private readonly bad = new Map<string, { version: string; err: RftError }>();

  constructor(
    readonly environment: string,
    readonly dir: string,
    private readonly log?: Logger,
  ) {}

  /** The *.jsonl files now in the folder that may be splits, by split name, in ORDER. */
  private files(): Map<string, string> {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return new Map();
    }
    const files = names
      .filter((n) => n.endsWith('.jsonl') && !NOT_ROWS.some((re) => re.test(n)))
      .map((n) => [splitOfFile(n), join(this.dir, n)] as [string, string])
      // validation.jsonl beside valid.jsonl: the longer name, as before.
      .sort(([a, fa], [b, fb]) => ORDER(a) - ORDER(b) || a.localeCompare(b) || fb.length - fa.length);
    return new Map(files.filter(([s], i) => i === 0 || files[i - 1]![0] !== s));
  }

  /** The splits it has now: its files that hold rows (or held them, while a new version is bad). */
  splits(): string[] {
    return [...this.files()].filter(([split, file]) => this.current(split, file) !== undefined).map(([split]) => split);
  }

  /** The rows of a split: those of its file now, or the ones last read while the file is bad or being written. */
  rows(split: string): Promise<Row[]> {
    const name = canonicalSplit(split);
    const file = this.files().get(name);
    const rows = file === undefined ? undefined : this.current(name, file, true);
    if (rows) return Promise.resolve(rows);
    // Its file is there and holds no rows: the server's problem to report, not a split the caller got wrong.
    const bad = this.bad.get(name);
    if (file !== undefined && bad) return Promise.reject(bad.err);
    return Promise.reject(errors.badRequest(`environment "${this.environment}" has no split "${split}" (it has: ${this.splits().join(', ') || 'none'})`));
  }

  /** The file's rows, read again when it changed; undefined when it never held any. `asked`: a door named it. */
  private current(split: string, file: string, asked = false): Row[] | undefined {
    const prev = this.loaded.get(split);
    let version = 'unreadable';
    try {
      const before = statSync(file);
      version = versionOf(before);
      if (prev?.version === version || this.bad.get(split)?.version === version) return prev?.rows;
      if (prev && Date.now() - before.mtimeMs < SETTLE_MS) return prev.rows;
      const text = readFileSync(file, 'utf8');
      if (versionOf(statSync(file)) !== version) throw new Error(`${file} changed while it was read (it is being written)`);
      const rows = parseRows(file, text);
      this.bad.delete(split);
      this.loaded.set(split, { version, rows });
      return rows;
    } catch (e) {
      const err = errors.environmentLoad(this.dir, (e as Error).message);
      if (this.bad.get(split)?.version !== version) {
        this.bad.set(split, { version, err });
        const context = { err, code: err.code, environment: this.environment, split, file };
        if (prev) this.log?.error(context, 'split kept its previous rows: its file cannot be read');
        else this.log?.[asked ? 'error' : 'warn'](context, 'not served as a split: its file holds no rows');
      }
      return prev?.rows;
    }
  }
}
