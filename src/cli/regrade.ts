// `regrade`: re-scores stored rollouts with the server's current grader (POST
// /v1/rollouts/:trace_id/regrade, which records the new score beside the old) and shows what moved.
import type { Command } from 'commander';
import { selectTraces, withSelectionOptions, type Selection } from './export-import.js';
import type { ServerClient } from './rollout/http.js';
import { withServerOptions, type ServerOptions } from './server-options.js';
import { pool } from './rollout/pool.js';
import { renderTable } from './report/table.js';

interface RegradeReply {
  trace_id: string;
  grader: string;
  previous: { score: number | null; grader_version: string } | null;
  current: { score: number | null; grader_version: string };
}

export interface RegradeRow {
  traceId: string;
  outcome: 'regraded' | 'not graded' | 'failed';
  reply?: RegradeReply;
  error?: string;
}

export function delta(r: RegradeReply): number | null {
  const a = r.previous?.score;
  const b = r.current.score;
  return a === null || a === undefined || b === null ? null : b - a;
}

function errorCode(text: string): string | undefined {
  try {
    return (JSON.parse(text) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
}

async function regradeOne(server: ServerClient, traceId: string, grader: string | undefined): Promise<RegradeRow> {
  const reply = await server.send('POST', `/v1/rollouts/${encodeURIComponent(traceId)}/regrade`, grader ? { grader } : {});
  if (reply.status === 200) return { traceId, outcome: 'regraded', reply: JSON.parse(reply.text) as RegradeReply };
  // A rollout the trainer never graded has no sample to re-score: not an error of this run.
  if (reply.status === 409 && errorCode(reply.text) === 'RFT_ERR_NOT_GRADED') return { traceId, outcome: 'not graded' };
  return { traceId, outcome: 'failed', error: `${reply.status} ${reply.text.slice(0, 300)}` };
}

const short = (v: string | undefined) => (v === undefined ? null : v.length > 14 ? v.slice(0, 12) + '..' : v);

export function renderRegrade(rows: RegradeRow[]): string {
  const done = rows.filter((r) => r.outcome === 'regraded');
  const table = renderTable(
    ['trace', 'grader', 'old score', 'old version', 'new score', 'new version', 'delta'],
    done.map((r) => {
      const x = r.reply!;
      return [r.traceId, x.grader, x.previous?.score ?? null, short(x.previous?.grader_version), x.current.score, short(x.current.grader_version), delta(x)];
    }),
  );
  const deltas = done.map((r) => delta(r.reply!)).filter((d): d is number => d !== null);
  const changed = deltas.filter((d) => Math.abs(d) > 1e-9);
  const meanDelta = deltas.length ? deltas.reduce((a, b) => a + b, 0) / deltas.length : null;
  const failed = rows.filter((r) => r.outcome === 'failed');
  const summary = [
    `${done.length} regraded, ${changed.length} changed (${changed.filter((d) => d > 0).length} up, ${changed.filter((d) => d < 0).length} down), ` +
      `mean delta ${meanDelta === null ? '-' : meanDelta.toFixed(3)}; ${rows.filter((r) => r.outcome === 'not graded').length} never graded, ${failed.length} failed`,
    ...failed.map((r) => `failed ${r.traceId}: ${r.error}`),
  ];
  return `${table}\n\n${summary.join('\n')}\n`;
}

interface RegradeOptions extends ServerOptions, Selection {
  grader?: string;
}

async function action(opts: RegradeOptions): Promise<void> {
  const server = (await import('./rollout/http.js')).clientFrom(opts);
  try {
    const ids = await selectTraces(server, opts);
    const rows = new Array<RegradeRow>(ids.length);
    // A few at a time: each runs a grader on the server, which may itself call a model.
    await pool([...ids.keys()], 4, async (i) => {
      rows[i] = await regradeOne(server, ids[i]!, opts.grader);
    });
    process.stdout.write(renderRegrade(rows));
    if (rows.some((r) => r.outcome === 'failed')) process.exitCode = 1;
  } finally {
    await server.close();
  }
}

export function register(program: Command): void {
  withServerOptions(
    withSelectionOptions(
      program
        .command('regrade')
        .description("re-score stored rollouts with the server's current grader and report the score changes")
        .option('--grader <name>', 'grader to use (default: the one that graded each rollout)'),
    ),
  ).action(action);
}
