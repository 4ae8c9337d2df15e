// One emulated rollout, played as the hosted trainer plays it: model turn, the turn's tool calls sent
// concurrently to the server in the wire format, outputs fed back, and at the end one grader call.
import { randomUUID } from 'node:crypto';
import { isRftError, errors, RftError } from '../../errors.js';
import type { DatasetRow } from './dataset.js';
import type { ServerClient, ServerReply } from './http.js';
import type { ModelClient, ModelTurn, ToolCallRequest, ToolOutput } from './model.js';
import { clip, postWithRetries } from './retry.js';
import { buildSample } from './sample.js';
import { Stopwatch } from './stopwatch.js';

export interface RolloutResult {
  row: number;
  try: number;
  trace_id: string;
  score: number | null;
  tool_calls: number;
  steps: number;
  /** True when the model still asked for tools at the step cap. */
  max_steps_reached: boolean;
  latency_ms: number;
  budget_exhausted: boolean | null;
  discarded: boolean;
  error: string | null;
  error_code: string | null;
  /** The emulator's own time, excluding waits on the server and the model (for the bench). */
  own_ms: number;
}

export interface RolloutDeps {
  server: ServerClient;
  model: ModelClient;
  maxSteps: number;
  graderPath: string;
  toolPath?: string;
  backoffMs?: number;
}

interface Outcome {
  turns: ModelTurn[];
  toolCalls: number;
  maxStepsReached: boolean;
}

async function callTool(deps: RolloutDeps, sw: Stopwatch, traceId: string, item: DatasetRow, c: ToolCallRequest): Promise<ToolOutput> {
  const body = { type: 'function_call', id: c.id, call_id: c.callId, name: c.name, arguments: c.arguments, trace_id: traceId, item };
  const r = await sw.wait(postWithRetries(deps.server, deps.toolPath ?? '/tools', body, deps.backoffMs ?? 250));
  if (!r.ok) throw errors.rolloutDiscarded(`tool ${c.name}: ${r.why}`);
  return { callId: c.callId, output: outputOf(r.reply) };
}

/** The numeric `score` of a grader reply, or null. */
export function scoreOf(reply: ServerReply): number | null {
  try {
    const score = (JSON.parse(reply.text) as { score?: unknown }).score;
    return typeof score === 'number' && Number.isFinite(score) ? score : null;
  } catch {
    return null;
  }
}

/** What the model sees for a tool reply: `output` of a 2xx, else the serialized body (as the trainer does for a 4xx). */
export function outputOf(reply: ServerReply): string {
  if (reply.status < 300) {
    try {
      const parsed = JSON.parse(reply.text) as { output?: unknown };
      if (typeof parsed.output === 'string') return parsed.output;
    } catch {
      // not JSON: the raw text is what the model sees
    }
  }
  return reply.text;
}

/** Plays the model turns into `o`, which stays accurate when a discard interrupts the loop. */
async function play(deps: RolloutDeps, sw: Stopwatch, traceId: string, item: DatasetRow, o: Outcome): Promise<void> {
  const conversation = deps.model.start(item);
  let outputs: ToolOutput[] = [];
  for (let step = 1; step <= deps.maxSteps; step++) {
    const turn = await sw.wait(conversation.next(outputs));
    o.turns.push(turn);
    if (turn.toolCalls.length === 0) return;
    o.toolCalls += turn.toolCalls.length;
    outputs = await sw.wait(Promise.all(turn.toolCalls.map((c) => callTool(deps, sw, traceId, item, c))));
  }
  o.maxStepsReached = true;
}

async function grade(deps: RolloutDeps, sw: Stopwatch, traceId: string, item: DatasetRow, turns: ModelTurn[]): Promise<number> {
  const body = { sample: buildSample(turns), item, trace_id: traceId };
  const r = await sw.wait(postWithRetries(deps.server, deps.graderPath, body, deps.backoffMs ?? 250));
  if (!r.ok) {
    // A row the grader refuses is the dataset's error, not the infrastructure's: keep the server's code.
    if (r.code === errors.badRow.code) throw new RftError(errors.badRow.code, errors.badRow.statusCode, `rollout discarded, the row is bad: grader: ${r.why}`);
    throw errors.rolloutDiscarded(`grader: ${r.why}`);
  }
  if (r.reply.status >= 300) throw errors.rolloutDiscarded(`grader answered ${r.reply.status}: ${clip(r.reply.text)}`);
  const score = scoreOf(r.reply);
  if (score === null) throw errors.rolloutDiscarded(`grader reply has no numeric score: ${clip(r.reply.text)}`);
  return score;
}

async function budgetExhausted(server: ServerClient, sw: Stopwatch, traceId: string): Promise<boolean | null> {
  try {
    const r = await sw.wait(server.json<{ budget?: { exceeded?: boolean } }>('GET', `/v1/rollouts/${encodeURIComponent(traceId)}`));
    return r.budget?.exceeded ?? null;
  } catch {
    return null; // a rollout with no recorded call may be unknown to the server
  }
}

/** A result with nothing played yet. */
export function newResult(row: number, tryIndex: number, traceId: string): RolloutResult {
  return {
    row,
    try: tryIndex,
    trace_id: traceId,
    score: null,
    tool_calls: 0,
    steps: 0,
    max_steps_reached: false,
    latency_ms: 0,
    budget_exhausted: null,
    discarded: false,
    error: null,
    error_code: null,
    own_ms: 0,
  };
}

/** Both infrastructure failures and model errors leave the rollout without a score. */
export function discard(result: RolloutResult, e: unknown): void {
  result.discarded = true;
  result.error = e instanceof Error ? e.message : String(e);
  result.error_code = isRftError(e) ? e.code : 'RFT_ERR_INTERNAL';
}

/** Once the rollout is over: its counts, whether the budget ran out (when the server knows it), its times. */
export async function settle(result: RolloutResult, played: { turns: unknown[]; toolCalls: number; maxStepsReached: boolean }, server: ServerClient, sw: Stopwatch, t0: number): Promise<void> {
  result.steps = played.turns.length;
  result.tool_calls = played.toolCalls;
  result.max_steps_reached = played.maxStepsReached;
  if (result.trace_id !== '') result.budget_exhausted = await budgetExhausted(server, sw, result.trace_id);
  result.latency_ms = Math.round(performance.now() - t0);
  result.own_ms = Number(sw.totals().ownMs.toFixed(3));
}

export async function runRollout(row: number, tryIndex: number, item: DatasetRow, deps: RolloutDeps): Promise<RolloutResult> {
  const sw = new Stopwatch();
  const t0 = performance.now();
  const traceId = `trace_${randomUUID()}`;
  const result = newResult(row, tryIndex, traceId);
  const outcome: Outcome = { turns: [], toolCalls: 0, maxStepsReached: false };
  try {
    await play(deps, sw, traceId, item, outcome);
    result.score = await grade(deps, sw, traceId, item, outcome.turns);
  } catch (e) {
    discard(result, e);
  }
  await settle(result, outcome, deps.server, sw, t0);
  return result;
}
