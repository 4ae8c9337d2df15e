// Turns per dataset row into the scripted server's script. The server sees what a model sees, so a
// conversation is matched to its row by its prompt (the row's system, developer and user messages);
// each new conversation of a row takes the row's next try, round robin, and keeps it to the end.
import { errors } from '../../errors.js';
import type { DatasetRow } from '../rollout/dataset.js';
import { promptOf, type Script, type ScriptedTurn, type TurnContext } from './scripted-server.js';

/** The turns a row is played with: one list per try (k > 1 cycles through them). */
export type RowTries = ScriptedTurn[][];

const keyOf = (prompt: TurnContext['prompt']) => JSON.stringify(prompt.map((m) => [m.role, m.text]));

/** The prompt key of a dataset row, as the server will see it. */
export function rowKey(row: DatasetRow): string {
  return keyOf(promptOf(row.messages as Record<string, unknown>[]));
}

/**
 * The script for `rows`, each played with `tries[i]`. Rows a model cannot tell apart (the same
 * prompt) must share their tries, else the file is refused: no script could keep them apart.
 */
export function scriptForRows(source: string, rows: readonly DatasetRow[], tries: readonly RowTries[]): Script {
  const byKey = new Map<string, { row: number; tries: RowTries }>();
  rows.forEach((row, i) => {
    const key = rowKey(row);
    const seen = byKey.get(key);
    if (seen && JSON.stringify(seen.tries) !== JSON.stringify(tries[i])) {
      throw errors.modelScript(source, 0, `rows ${seen.row} and ${i} have the same prompt but different scripted turns: a model cannot tell them apart`);
    }
    if (!seen) byKey.set(key, { row: i, tries: tries[i]! });
  });
  const next = new Map<string, number>(); // prompt key -> next try to hand out
  const playing = new Map<string, ScriptedTurn[]>(); // conversation -> its turns
  return (ctx) => {
    let turns = playing.get(ctx.conversation);
    if (!turns) {
      const key = keyOf(ctx.prompt);
      const entry = byKey.get(key);
      // Only a prompt outside the dataset gets here: the request fails (a model API error), never a made-up answer.
      if (!entry) throw new Error(`${source}: no scripted turns for this prompt (not a row of the dataset)`);
      const n = next.get(key) ?? 0;
      next.set(key, n + 1);
      turns = entry.tries[n % entry.tries.length]!;
      playing.set(ctx.conversation, turns);
    }
    // Past the script's end the model gives up with an empty answer.
    const turn = turns[ctx.turn] ?? { text: '' };
    if (!turn.calls?.length) playing.delete(ctx.conversation);
    return turn;
  };
}
