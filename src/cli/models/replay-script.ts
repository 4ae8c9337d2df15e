// `--model replay:EXPORT`: the model side of recorded rollouts (a file `export` wrote), played again.
// A record is one try of the row its `item` is (by the row's `id`, else by the same prompt): its
// recorded calls in the order `replay` sends them (calls whose intervals overlapped make one parallel
// turn), then the final answer of its grade's sample. Records never graded have no final answer and
// are left out; records of rows outside the dataset are ignored; a row with no record is an error.
import { errors } from '../../errors.js';
import type { DatasetRow } from '../rollout/dataset.js';
import { planReplay } from '../replay/plan.js';
import { parseRolloutsFile, type RolloutJson } from '../replay/source.js';
import { rowKey, scriptForRows, type RowTries } from './row-script.js';
import type { Script, ScriptedTurn } from './scripted-server.js';

/** The final answer of a record: its grade's sample text (the endpoint's grade first, as `replay` regrades). */
function finalText(rec: RolloutJson): string | null {
  const grades = [...rec.grades].reverse();
  const g = grades.find((x) => x.source === 'endpoint' && x.status === 'ok') ?? grades.find((x) => x.status === 'ok') ?? grades[0];
  const text = (g?.sample as { output_text?: unknown } | undefined)?.output_text;
  return typeof text === 'string' ? text : null;
}

export function turnsOfRecord(rec: RolloutJson): ScriptedTurn[] | null {
  const text = finalText(rec);
  if (text === null) return null;
  const turns: ScriptedTurn[] = planReplay(rec.calls).groups.map((group) => ({ calls: group.map((c) => ({ name: c.tool, arguments: c.arguments })) }));
  turns.push({ text });
  return turns;
}

export function rowTriesFromExport(file: string, rows: readonly DatasetRow[]): RowTries[] {
  const byId = new Map<string, number>();
  const byKey = new Map<string, number>();
  rows.forEach((r, i) => {
    if (typeof r.id === 'string' && !byId.has(r.id)) byId.set(r.id, i);
    if (!byKey.has(rowKey(r))) byKey.set(rowKey(r), i);
  });
  const tries: RowTries[] = rows.map(() => []);
  for (const rec of parseRolloutsFile(file)) {
    const item = rec.item ?? {};
    const row = typeof item.id === 'string' && byId.has(item.id) ? byId.get(item.id) : Array.isArray(item.messages) ? byKey.get(rowKey(item as DatasetRow)) : undefined;
    const turns = turnsOfRecord(rec);
    if (row !== undefined && turns) tries[row]!.push(turns);
  }
  const missing = tries.flatMap((t, i) => (t.length === 0 ? [i] : []));
  if (missing.length > 0) {
    throw errors.modelScript(file, 0, `no graded recorded rollout of rows ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', ...' : ''} (matched by the row's "id", else by its messages)`);
  }
  return tries;
}

export function scriptFromExport(file: string, rows: readonly DatasetRow[]): Script {
  return scriptForRows(file, rows, rowTriesFromExport(file, rows));
}
