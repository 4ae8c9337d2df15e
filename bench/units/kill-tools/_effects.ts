// The kill loop's countable side effect: one line per run of a tool, appended before the tool does
// anything else, so a run shows even if the server dies during it. The file survives kill -9 (the
// page cache is the kernel's). Path from BENCH_EFFECTS_FILE (bench/lib/kill-loop.ts sets it).
import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';

/** Records this run and returns a token unique to it (so two runs of one call never give one output). */
export function effect(traceId: string, callId: string): string {
  const token = randomUUID();
  const file = process.env.BENCH_EFFECTS_FILE;
  if (!file) throw new Error('BENCH_EFFECTS_FILE is not set');
  appendFileSync(file, `${JSON.stringify([traceId, callId, token])}\n`);
  return token;
}
