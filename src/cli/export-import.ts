// `export` and `import`: rollouts move between servers as JSONL, one GET /v1/rollouts/:trace_id
// object per line, so a record can be replayed, re-graded or archived elsewhere.
import { createWriteStream } from 'node:fs';
import type { Command } from 'commander';
import { errors } from '../errors.js';
import { readInputFile } from './files.js';
import { fetchRollout } from './replay/source.js';
import type { ServerClient } from './rollout/http.js';
import { withServerOptions, type ServerOptions } from './server-options.js';
import { pool } from './rollout/pool.js';

interface ListPage {
  rollouts: { trace_id: string }[];
  next_cursor: string | null;
}

export interface Selection {
  since?: string;
  trace?: string[];
  run?: string;
}

/** The trace ids a --trace / --since selection names: explicit ids as given, else the server's listing. */
export async function selectTraces(server: ServerClient, sel: Selection): Promise<string[]> {
  if (sel.trace && sel.trace.length > 0) return sel.trace;
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams({ limit: '500' });
    if (sel.since) q.set('since', sel.since);
    if (sel.run) q.set('run', sel.run);
    if (cursor) q.set('cursor', cursor);
    const page: ListPage = await server.json<ListPage>('GET', `/v1/rollouts?${q.toString()}`);
    ids.push(...page.rollouts.map((r) => r.trace_id));
    cursor = page.next_cursor;
  } while (cursor);
  return ids;
}

export function withSelectionOptions(cmd: Command): Command {
  return cmd
    .option('--since <time>', 'only rollouts updated since this ISO time (or epoch milliseconds)')
    .option('--trace <id...>', 'only these trace ids (repeatable)')
    .option('--run <name>', 'only the rollouts of this run label (rollout --run, the x-rft-run header)');
}

interface ExportOptions extends ServerOptions, Selection {
  out?: string;
}

async function exportAction(opts: ExportOptions): Promise<void> {
  const server = (await import('./rollout/http.js')).clientFrom(opts);
  const out = opts.out ? createWriteStream(opts.out) : process.stdout;
  try {
    const ids = await selectTraces(server, opts);
    // Fetched 8 at a time, written in listing order.
    const lines = new Array<string>(ids.length);
    await pool([...ids.keys()], 8, async (i) => {
      lines[i] = JSON.stringify(await fetchRollout(server, ids[i]!));
    });
    for (const line of lines) out.write(line + '\n');
    process.stderr.write(`exported ${ids.length} rollouts${opts.out ? ` to ${opts.out}` : ''}\n`);
  } finally {
    if (out !== process.stdout) await new Promise<void>((resolve) => (out as ReturnType<typeof createWriteStream>).end(resolve));
    await server.close();
  }
}

// Keeps each import request well under the server's 1 MB body limit.
const BATCH_BYTES = 512 * 1024;
const BATCH_MAX = 200;

export function batches(lines: string[]): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  let bytes = 0;
  for (const line of lines) {
    const n = Buffer.byteLength(line);
    if (cur.length > 0 && (bytes + n > BATCH_BYTES || cur.length >= BATCH_MAX)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(line);
    bytes += n;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

async function importAction(file: string, opts: ServerOptions): Promise<void> {
  const lines = readInputFile(file, 'export file').split('\n').filter((l) => l.trim() !== '');
  const rollouts = lines.map((l, i) => {
    try {
      return JSON.parse(l) as unknown;
    } catch (e) {
      throw errors.dataset(file, i + 1, `not JSON: ${(e as Error).message}`);
    }
  });
  const server = (await import('./rollout/http.js')).clientFrom(opts);
  const tally = { imported: 0, exists: 0 };
  try {
    let offset = 0;
    for (const batch of batches(lines)) {
      const body = { rollouts: rollouts.slice(offset, (offset += batch.length)) };
      const reply = await server.json<{ results: { status: 'imported' | 'exists' }[] }>('POST', '/v1/rollouts/import', body);
      for (const r of reply.results) tally[r.status]++;
    }
    console.log(`imported ${tally.imported} rollouts, ${tally.exists} already present`);
  } finally {
    await server.close();
  }
}

export function register(program: Command): void {
  withServerOptions(withSelectionOptions(program.command('export').description('write recorded rollouts as JSONL (one GET /v1/rollouts/:id object per line)')))
    .option('--out <file>', 'output file (default: stdout)')
    .action(exportAction);
  withServerOptions(program.command('import').description('load rollouts from an `export` JSONL file into the server'))
    .argument('<file>', 'JSONL written by `export`')
    .action(importAction);
}
