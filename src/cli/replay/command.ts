// `replay`: re-sends a recorded rollout's tool calls against a fresh rollout (new trace id, same
// item), compares every output with the record, re-grades the recorded sample, and exits 1 when
// anything diverged, so a tool or grader change that alters behaviour cannot pass unnoticed.
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { DEFAULT_NORMALIZERS, forDiff, normalize, unifiedDiff, userNormalizer, type Normalizer } from './diff.js';
import { planReplay } from './plan.js';
import { fetchRollout, loadRollouts, type RecordedCallJson, type RolloutJson } from './source.js';
import type { ServerClient } from '../rollout/http.js';
import { withServerOptions, type ServerOptions } from '../server-options.js';
import { postWithRetries } from '../rollout/retry.js';
import { outputOf, scoreOf } from '../rollout/run.js';

export type CallVerdict = 'same' | 'same after normalizing' | 'different' | 'failed';

export interface CallComparison {
  seq: number;
  tool: string;
  verdict: CallVerdict;
  recordedStatus: string;
  replayStatus: string | null;
  diff: string;
}

export interface GradeComparison {
  grader: string;
  recordedScore: number | null;
  replayScore: number | null;
  recordedVersion: string;
  replayVersion: string | null;
  same: boolean;
}

export interface ReplayOutcome {
  recordedTrace: string;
  replayTrace: string;
  groups: number;
  calls: CallComparison[];
  skipped: number;
  grade: GradeComparison | null;
  diverged: boolean;
}

function compare(c: RecordedCallJson, replayed: string, normalizers: readonly Normalizer[]): Omit<CallComparison, 'replayStatus'> {
  const base = { seq: c.seq, tool: c.tool, recordedStatus: c.status };
  const recorded = c.output ?? '';
  if (recorded === replayed) return { ...base, verdict: 'same', diff: '' };
  const a = normalize(forDiff(recorded), normalizers);
  const b = normalize(forDiff(replayed), normalizers);
  if (a === b) return { ...base, verdict: 'same after normalizing', diff: '' };
  return { ...base, verdict: 'different', diff: unifiedDiff(a, b, [`#${c.seq} ${c.tool} (recorded)`, `#${c.seq} ${c.tool} (replay)`]) };
}

async function regrade(server: ServerClient, rec: RolloutJson, traceId: string): Promise<Omit<GradeComparison, 'replayVersion'> | null> {
  const grades = [...rec.grades].reverse();
  const g = grades.find((x) => x.source === 'endpoint' && x.status === 'ok') ?? grades.find((x) => x.status === 'ok');
  if (!g) return null;
  const r = await postWithRetries(server, `/graders/${encodeURIComponent(g.grader)}`, { sample: g.sample, item: rec.item ?? {}, trace_id: traceId }, 250);
  const score = r.ok && r.reply.status < 300 ? scoreOf(r.reply) : null;
  const same = score !== null && g.score !== null && Math.abs(score - g.score) < 1e-9;
  return { grader: g.grader, recordedScore: g.score, replayScore: score, recordedVersion: g.grader_version, same };
}

export async function replayRollout(server: ServerClient, rec: RolloutJson, normalizers: readonly Normalizer[]): Promise<ReplayOutcome> {
  const traceId = `trace_${randomUUID()}`;
  const item = rec.item ?? {};
  const plan = planReplay(rec.calls);
  const compared: Omit<CallComparison, 'replayStatus'>[] = [];
  for (const group of plan.groups) {
    const results = await Promise.all(
      group.map(async (c) => {
        const body = { type: 'function_call', id: `fc_${randomUUID()}`, call_id: c.call_id, name: c.tool, arguments: c.arguments, trace_id: traceId, item };
        const r = await postWithRetries(server, '/tools', body, 250);
        if (!r.ok) return { seq: c.seq, tool: c.tool, recordedStatus: c.status, verdict: 'failed' as const, diff: r.why };
        return compare(c, outputOf(r.reply), normalizers);
      }),
    );
    compared.push(...results);
  }
  const grade = await regrade(server, rec, traceId);
  // The fresh record tells each replayed call's status and the grader version that scored it.
  const fresh = await fetchRollout(server, traceId).catch(() => null);
  // The replay's own rollout is done: free its sandbox now rather than at the server's TTL.
  await server.send('DELETE', `/v1/rollouts/${encodeURIComponent(traceId)}`).catch(() => undefined);
  const statusOf = new Map((fresh?.calls ?? []).map((c) => [c.call_id, c.status]));
  const callIdOf = new Map(rec.calls.map((c) => [c.seq, c.call_id]));
  const calls: CallComparison[] = compared.map((c) => {
    const replayStatus = statusOf.get(callIdOf.get(c.seq) ?? '') ?? null;
    const statusChanged = replayStatus !== null && replayStatus !== c.recordedStatus && c.verdict !== 'failed';
    return { ...c, replayStatus, ...(statusChanged ? { verdict: 'different' as const } : {}) };
  });
  const freshGrade = fresh?.grades.at(-1);
  const gradeCmp: GradeComparison | null = grade ? { ...grade, replayVersion: freshGrade?.grader_version ?? null } : null;
  const diverged = calls.some((c) => c.verdict === 'different' || c.verdict === 'failed') || (gradeCmp !== null && !gradeCmp.same);
  return { recordedTrace: rec.trace_id, replayTrace: traceId, groups: plan.groups.length, calls, skipped: plan.skipped.length, grade: gradeCmp, diverged };
}

export function formatOutcome(o: ReplayOutcome): string {
  const lines = [`replay ${o.recordedTrace} -> ${o.replayTrace}: ${o.calls.length} calls in ${o.groups} groups${o.skipped ? `, ${o.skipped} unfinished skipped` : ''}`];
  const w = Math.max(4, ...o.calls.map((c) => c.tool.length));
  for (const c of o.calls) {
    const status = c.replayStatus !== null && c.replayStatus !== c.recordedStatus ? ` (status ${c.recordedStatus} -> ${c.replayStatus})` : '';
    lines.push(`  #${String(c.seq).padEnd(3)} ${c.tool.padEnd(w)}  ${c.verdict}${status}`);
  }
  if (o.grade) {
    const g = o.grade;
    const version = g.replayVersion && g.replayVersion !== g.recordedVersion ? ` (grader version ${g.recordedVersion} -> ${g.replayVersion})` : '';
    lines.push(`  grade ${g.grader}: ${g.recordedScore ?? '-'} -> ${g.replayScore ?? 'failed'}  ${g.same ? 'same' : 'different'}${version}`);
  } else {
    lines.push('  grade: no recorded grade to compare');
  }
  for (const c of o.calls) if (c.diff) lines.push('', c.diff);
  const bad = o.calls.filter((c) => c.verdict === 'different' || c.verdict === 'failed').length;
  lines.push('', o.diverged ? `DIVERGED: ${bad} of ${o.calls.length} calls differ${o.grade && !o.grade.same ? ', grade differs' : ''}` : 'MATCH');
  return lines.join('\n');
}

interface ReplayOptions extends ServerOptions {
  normalize: string[];
  exact?: boolean;
}

async function action(source: string, opts: ReplayOptions): Promise<void> {
  const server = (await import('../rollout/http.js')).clientFrom(opts);
  try {
    const normalizers = [...(opts.exact ? [] : DEFAULT_NORMALIZERS), ...opts.normalize.map(userNormalizer)];
    let diverged = false;
    for (const rec of await loadRollouts(server, source)) {
      const outcome = await replayRollout(server, rec, normalizers);
      process.stdout.write(formatOutcome(outcome) + '\n');
      diverged ||= outcome.diverged;
    }
    if (diverged) process.exitCode = 1;
  } finally {
    await server.close();
  }
}

export function register(program: Command): void {
  withServerOptions(
    program
      .command('replay')
      .description('re-send a recorded rollout\'s tool calls against a fresh rollout, diff the outputs, re-grade; exit 1 on divergence')
      .argument('<trace-or-file>', 'a trace id on the server, or a JSON/JSONL file written by `export`')
      .option('--normalize <regex...>', 'extra patterns to blank out before comparing (repeatable)', [])
      .option('--exact', 'compare byte for byte, without the default timestamp, uuid and trace id normalizers'),
  ).action(action);
}
