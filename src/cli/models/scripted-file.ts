// `--model scripted:FILE`: a JSONL file of scripted turns per dataset row (format in docs/emulator.md).
// Each line names its row by the row's `id` field, by `row` (0-based, as the results file counts),
// or is the `default` for rows no other line names; it holds `turns`, or `tries` (one list of turns
// per try, handed out in turn). Every row must be covered before the first rollout starts.
import { z } from 'zod';
import { errors } from '../../errors.js';
import { forEachJsonLine, readInputFile } from '../files.js';
import type { DatasetRow } from '../rollout/dataset.js';
import { scriptForRows, type RowTries } from './row-script.js';
import type { Script } from './scripted-server.js';

// Strict objects: a misspelt key ("call", "answer") would otherwise end every rollout with an empty answer.
const callSchema = z.strictObject({
  name: z.string().min(1),
  /** An object is JSON-encoded; a string is sent as is (to script malformed arguments). */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
});
const turnSchema = z.strictObject({ calls: z.array(callSchema).optional(), text: z.string().optional() });
const turnsSchema = z.array(turnSchema).min(1);
const lineSchema = z
  .strictObject({
    id: z.string().min(1).optional(),
    row: z.number().int().min(0).optional(),
    default: z.literal(true).optional(),
    turns: turnsSchema.optional(),
    tries: z.array(turnsSchema).min(1).optional(),
  })
  .refine((l) => [l.id, l.row, l.default].filter((x) => x !== undefined).length === 1, 'needs exactly one of "id", "row" or "default": true')
  .refine((l) => (l.turns === undefined) !== (l.tries === undefined), 'needs exactly one of "turns" or "tries"');

interface Line {
  line: number;
  tries: RowTries;
}

/** Each row's tries, from the file's lines; a line that names no row, or a row no line covers, is an error. */
export function rowTriesFromFile(file: string, rows: readonly DatasetRow[]): RowTries[] {
  const byId = new Map<string, Line>();
  const byRow = new Map<number, Line>();
  let fallback: Line | undefined;
  const ids = new Map(rows.map((r, i) => [typeof r.id === 'string' ? r.id : undefined, i]));
  forEachJsonLine(file, readInputFile(file, 'scripted model file'), (value, line) => {
    const parsed = lineSchema.safeParse(value);
    if (!parsed.success) throw errors.modelScript(file, line, z.prettifyError(parsed.error).replace(/\n/g, '; '));
    const l = parsed.data;
    const entry = { line, tries: (l.tries ?? [l.turns!]) as RowTries };
    const twice = (what: string, first: Line) => errors.modelScript(file, line, `${what} is scripted twice (first on line ${first.line})`);
    if (l.id !== undefined) {
      if (!ids.has(l.id)) throw errors.modelScript(file, line, `no dataset row has id "${l.id}"`);
      if (byId.has(l.id)) throw twice(`id "${l.id}"`, byId.get(l.id)!);
      byId.set(l.id, entry);
    } else if (l.row !== undefined) {
      if (l.row >= rows.length) throw errors.modelScript(file, line, `row ${l.row} is past the dataset's last row (${rows.length - 1}; rows count from 0)`);
      if (byRow.has(l.row)) throw twice(`row ${l.row}`, byRow.get(l.row)!);
      byRow.set(l.row, entry);
    } else {
      if (fallback) throw twice('the default', fallback);
      fallback = entry;
    }
  });
  const missing: number[] = [];
  const tries = rows.map((r, i) => {
    const hit = (typeof r.id === 'string' ? byId.get(r.id) : undefined) ?? byRow.get(i) ?? fallback;
    if (!hit) missing.push(i);
    return hit?.tries ?? [];
  });
  if (missing.length > 0) {
    throw errors.modelScript(file, 0, `no scripted turns for rows ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', ...' : ''} (by "id", "row" from 0, or a "default" line)`);
  }
  return tries;
}

export function scriptFromFile(file: string, rows: readonly DatasetRow[]): Script {
  return scriptForRows(file, rows, rowTriesFromFile(file, rows));
}
