// Where a replay's rollouts come from: the server's record (GET /v1/rollouts/:trace_id) or a file
// written by `export` (JSONL, one rollout per line), a single JSON rollout, or `{ rollouts: [...] }`.
import { existsSync } from 'node:fs';
import { errors } from '../../errors.js';
import { forEachJsonLine, readInputFile } from '../files.js';
import type { ServerClient } from '../rollout/http.js';

export interface RecordedCallJson {
  seq: number;
  call_id: string;
  tool: string;
  arguments: string;
  output: string | null;
  status: string;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
}

export interface RecordedGradeJson {
  grader: string;
  grader_version: string;
  sample: unknown;
  score: number | null;
  status: string;
  source: string;
  created_at: string;
}

export interface RolloutJson {
  trace_id: string;
  item: Record<string, unknown> | null;
  budget?: { used: number; limit: number; exceeded: boolean };
  calls: RecordedCallJson[];
  grades: RecordedGradeJson[];
}

function isRollout(v: unknown): v is RolloutJson {
  const r = v as RolloutJson | null;
  return typeof r === 'object' && r !== null && typeof r.trace_id === 'string' && Array.isArray(r.calls) && Array.isArray(r.grades);
}

export function parseRolloutsFile(file: string): RolloutJson[] {
  const text = readInputFile(file, 'rollouts file');
  const out: RolloutJson[] = [];
  const take = (v: unknown, where: number) => {
    if (isRollout(v)) out.push(v);
    else if (v && typeof v === 'object' && Array.isArray((v as { rollouts?: unknown }).rollouts)) (v as { rollouts: unknown[] }).rollouts.forEach((r) => take(r, where));
    else throw errors.dataset(file, where, 'not a rollout record (expected trace_id, calls and grades, as `export` writes)');
  };
  try {
    take(JSON.parse(text), 1); // one JSON document
  } catch (e) {
    if ((e as { code?: string }).code === 'RFT_ERR_DATASET') throw e;
    forEachJsonLine(file, text, take);
  }
  return out;
}

export async function fetchRollout(server: ServerClient, traceId: string): Promise<RolloutJson> {
  return server.json<RolloutJson>('GET', `/v1/rollouts/${encodeURIComponent(traceId)}`);
}

/** A path that exists is a file; anything else is a trace id on the server. */
export async function loadRollouts(server: ServerClient, source: string): Promise<RolloutJson[]> {
  return existsSync(source) ? parseRolloutsFile(source) : [await fetchRollout(server, source)];
}
