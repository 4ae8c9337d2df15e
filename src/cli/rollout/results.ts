// The results JSONL: one line per finished rollout, appended as it finishes, so a run that is killed
// keeps everything it finished and a rerun skips those (row, try) pairs.
import { appendFileSync, existsSync, readFileSync, truncateSync } from 'node:fs';
import type { RolloutResult } from './run.js';

export function pairKey(row: number, tryIndex: number): string {
  return `${row}:${tryIndex}`;
}

/**
 * Parses a results file, skipping lines that are not complete results (a torn last line). A pair
 * that was run again (--retry-discarded) counts once, with its latest line.
 */
export function readResults(file: string): RolloutResult[] {
  if (!existsSync(file)) return [];
  const latest = new Map<string, RolloutResult>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      const r = JSON.parse(line) as RolloutResult;
      if (Number.isInteger(r.row) && Number.isInteger(r.try)) {
        const key = pairKey(r.row, r.try);
        latest.delete(key); // re-inserted last, so the file order of the latest lines is kept
        latest.set(key, r);
      }
    } catch {
      // an interrupted write; its rollout runs again
    }
  }
  return [...latest.values()];
}

export class ResultsFile {
  readonly done: Set<string>;

  /** With `retryDiscarded`, discarded rollouts do not count as done and run again. */
  constructor(
    private readonly file: string,
    opts: { retryDiscarded?: boolean } = {},
  ) {
    this.done = new Set(readResults(file).filter((r) => !(opts.retryDiscarded && r.discarded)).map((r) => pairKey(r.row, r.try)));
    this.dropTornTail();
  }

  append(r: RolloutResult): void {
    appendFileSync(this.file, JSON.stringify(r) + '\n');
    this.done.add(pairKey(r.row, r.try));
  }

  /** A kill mid-write leaves a line without its newline; cut it so the next append starts clean. */
  private dropTornTail(): void {
    if (!existsSync(this.file)) return;
    const buf = readFileSync(this.file);
    if (buf.length === 0 || buf[buf.length - 1] === 0x0a) return;
    truncateSync(this.file, buf.lastIndexOf(0x0a) + 1);
  }
}
