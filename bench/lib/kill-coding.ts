// The kill loop's coding rollouts (bench/lib/kill-loop.ts): each writes notes into its workspace
// and checks after every write that all of them are there, applies the task's solution, and is
// graded by unit_tests, while the server is killed and restarted under it. The trainer's side as
// the wire contract has it: a call or grade answered 5xx is retried at most 3 times with the same
// id, then the rollout is dropped; a connection refused while the server is down is retried once
// the next server listens. What must never happen: a 200 that shows the model an interrupted call
// or a workspace that lost its notes, and a grade answered with a score on a replaced workspace.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';

const ROOT = join(import.meta.dirname, '..', '..');
const row = JSON.parse(readFileSync(join(ROOT, 'examples/coding/train.jsonl'), 'utf8').split('\n')[0]!) as Record<string, unknown> & { task_id: string };
const SOLUTION = readFileSync(join(ROOT, 'examples/coding/tasks', row.task_id, 'solution.patch'), 'utf8');
const ITEM = { ...row, messages: undefined, tools: undefined, tool_budget: 50 };
const NOTES = 4;

export interface CodingCounts {
  /** Coding rollouts begun, graded with a score, and dropped after a 5xx (their workspace lost in a restart). */
  started: number;
  graded: number;
  dropped: number;
  /** Why rollouts were dropped: the error code of the 5xx that ended each. */
  droppedBy: Record<string, number>;
  /** 200 replies on a workspace that lost the rollout's notes (the model would see its work vanish). */
  replacedCalls: number;
  /** Grades answered with a score that the rollout's intact work cannot have earned (a replaced workspace). */
  gradedReplaced: number;
  /** 200 replies whose output is a call a restart interrupted. */
  shownInterrupted: number;
}

export interface CodingTrainer {
  /** The address of the live server; undefined while it is down. */
  url: () => string | undefined;
  stopped: () => boolean;
  headers: Record<string, string>;
  traces: string[];
  counts: CodingCounts;
  /** Tool calls answered 200, to check against the record. */
  acked: { traceId: string; callId: string; output: string }[];
}

type Reply = { status: number; body: { output?: string; score?: number; error?: { code?: string } } } | null;

async function post(url: string, path: string, headers: Record<string, string>, body: unknown): Promise<Reply> {
  try {
    const res = await request(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.statusCode, body: (await res.body.json()) as never };
  } catch {
    return null; // the server died under this request, or is not up yet
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends one request as the trainer would; undefined when it gave up (the rollout is dropped) or the loop ended. */
async function send(t: CodingTrainer, path: string, body: unknown): Promise<Reply | undefined> {
  let failures = 0;
  for (;;) {
    if (t.stopped()) return undefined;
    const url = t.url();
    if (url === undefined) {
      await sleep(50);
      continue;
    }
    const reply = await post(url, path, t.headers, body);
    if (reply === null) {
      await sleep(50);
      continue;
    }
    if (reply.status < 500) {
      if ((reply.body.output ?? '').includes('interrupted by a server restart')) t.counts.shownInterrupted++;
      return reply;
    }
    if (++failures > 3) {
      const code = reply.body.error?.code ?? String(reply.status);
      t.counts.droppedBy[code] = (t.counts.droppedBy[code] ?? 0) + 1;
      return undefined;
    }
    await sleep(100 * failures);
  }
}

/** One coding rollout from its first call to its grade; false when the trainer dropped it. */
async function codingRollout(t: CodingTrainer, n: number): Promise<boolean> {
  const trace = `trace_code_${n}_${process.pid}_${Date.now()}`;
  t.traces.push(trace);
  t.counts.started++;
  let seq = 0;
  const call = async (name: string, args: unknown): Promise<Reply | undefined> => {
    const callId = `call_${seq++}`;
    const reply = await send(t, '/tools', { type: 'function_call', call_id: callId, name, arguments: JSON.stringify(args), trace_id: trace, item: ITEM });
    if (reply?.status === 200) t.acked.push({ traceId: trace, callId, output: reply.body.output ?? '' });
    return reply;
  };
  for (let i = 0; i < NOTES; i++) {
    if (!(await call('write_file', { path: `notes/n${i}.txt`, content: `note ${i}\n` }))) return false;
    const check = await call('shell', { command: 'echo "notes=$(ls notes | wc -l)"' });
    if (!check) return false;
    if (!(check.body.output ?? '').includes(`notes=${i + 1}`)) t.counts.replacedCalls++;
  }
  if (!(await call('apply_patch', { patch: SOLUTION }))) return false;
  const graded = await send(t, '/graders/unit_tests', { sample: { output_text: 'Fixed.', output_tools: [], choices: [] }, item: ITEM, trace_id: trace });
  if (!graded) return false;
  // The notes and the solution are there: the hidden cases pass. Anything less was a replaced workspace.
  if (graded.status === 200 && (graded.body.score ?? 0) < 0.9) t.counts.gradedReplaced++;
  t.counts.graded++;
  return true;
}

/** Runs coding rollouts one after the other until the loop stops. */
export async function codingClient(t: CodingTrainer, k: number): Promise<void> {
  for (let n = 0; !t.stopped(); n++) {
    if (!(await codingRollout(t, k * 10_000 + n)) && !t.stopped()) t.counts.dropped++;
  }
}
