// `check-grader --from-export FILE`: probes on recorded trajectories. A grader that reads the
// rollout's tool calls (ctx.rollout.calls(), the sample's output_tools) sees real ones: each probe
// is graded under a fresh trace holding a copy of the record's calls (its grades left out), with the
// calls in the sample as the trainer sends them. The no-op probe stays an empty trace: the model
// that did nothing made no call either.
import { randomUUID } from 'node:crypto';
import { errors } from '../errors.js';
import { parseRolloutsFile, type RolloutJson } from './replay/source.js';

export interface Trajectory {
  item: Record<string, unknown>;
  record: RolloutJson;
}

/** The export's records that carry an item (the row the grader reads), in file order. */
export function trajectoriesFromExport(file: string): Trajectory[] {
  const out = parseRolloutsFile(file).flatMap((record) => (record.item ? [{ item: record.item, record }] : []));
  if (out.length === 0) throw errors.dataset(file, 0, 'no recorded rollout with an item to grade');
  return out;
}

/** The record's finished calls as the sample's output_tools (Chat Completions form, in arrival order). */
export function outputToolsOf(record: RolloutJson): unknown[] {
  return [...record.calls]
    .sort((a, b) => a.seq - b.seq)
    .map((c) => ({ id: c.call_id, type: 'function', function: { name: c.tool, arguments: c.arguments } }));
}

type Inject = (req: { method: 'POST'; url: string; payload: Record<string, unknown> }) => Promise<{ statusCode: number; body: string }>;

/** A copy of the record under a fresh trace id, imported into the check's own server; the id to grade under. */
export async function seedTrace(inject: Inject, record: RolloutJson): Promise<string> {
  const traceId = `trace_${randomUUID()}`;
  const res = await inject({ method: 'POST', url: '/v1/rollouts/import', payload: { rollouts: [{ ...record, trace_id: traceId, grades: [] }] } });
  if (res.statusCode !== 200) throw errors.serverReply(`importing the calls of ${record.trace_id}`, res.statusCode, res.body);
  return traceId;
}
