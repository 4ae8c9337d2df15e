// One ORS tool call, as the `end` event's JSON (RunToolOutput in openrewardstandard/python-sdk
// src/ors/types.py): a tool's output as a text block with `reward: null`; the submit tool's answer
// graded, its `reward` the grader's score and `finished: true`; a spent budget ends the episode
// (`finished: true`), graded with the empty answer. The model's mistakes (an unknown tool, input its schema refuses) are
// `ok: false`, which the client raises and TRL shows the model. Failures of ours reject: the door
// then ends the stream without a result and the client reconnects with the task_id.
import { z } from 'zod';
import { failureClass, NO_ANSWER, type DoorCore, type Rollout } from '../core.js';
import type { Session, Sessions } from './sessions.js';
import { textBlock, type TextBlock } from './catalog.js';

export type CallResult =
  | { ok: true; output: { blocks: TextBlock[]; metadata: Record<string, unknown> | null; reward: number | null; finished: boolean } }
  | { ok: false; error: string };

export interface CallInput {
  core: DoorCore;
  sessions: Sessions;
  session: Session;
  /** A reconnect with a task_id streamed before: its recorded result is answered even after the episode ended. */
  reconnect: boolean;
  rollout: Rollout;
  taskId: string;
  name: string;
  input: Record<string, unknown>;
  submitTool: string;
}

const submitInput = z.object({ answer: z.string() }).strict();

/**
 * Whether a new call ends the episode as it is recorded (its task_id and the end in one write, one fsync:
 * issue 41): a submit whose input is one, which submit() below would take the end for first thing.
 */
export const endsEpisode = (name: string, input: unknown, submitTool: string): boolean => name === submitTool && submitInput.safeParse(input).success;

const output = (text: string, finished = false, reward: number | null = null, metadata: Record<string, unknown> | null = null): CallResult => ({
  ok: true,
  output: { blocks: [textBlock(text)], metadata, reward, finished },
});

/** A model's mistake is its observation; anything else (ours, or the row's, which /create refuses first) rejects. */
function asObservation(e: unknown, step: 'call' | 'grade'): CallResult {
  if (failureClass(e, step) === 'model') return { ok: false, error: (e as Error).message };
  throw e;
}

export async function runCall(c: CallInput): Promise<CallResult> {
  const s = c.session;
  // (the submit that ended it, run again on a reconnect after our failure, is not refused)
  if (s.finished && s.finishedBy !== c.taskId && !c.reconnect) return output('The episode is over: no tool can be called after it ends.', true);
  if (c.name === c.submitTool) return submit(c);
  let outcome;
  try {
    outcome = await c.core.callTool(c.rollout, c.taskId, c.name, c.input);
  } catch (e) {
    return asObservation(e, 'call');
  }
  if (outcome.status === 'invalid_arguments') return { ok: false, error: outcome.output };
  if (outcome.status === 'budget_exceeded') {
    // The episode ends unanswered: graded with the empty answer, as every door grades a spent budget.
    if (!(await c.sessions.finish(s, c.taskId, true))) return output(outcome.output, true);
    return graded(c, NO_ANSWER, outcome.output);
  }
  return output(outcome.output);
}

async function submit(c: CallInput): Promise<CallResult> {
  const parsed = submitInput.safeParse(c.input);
  if (!parsed.success) return { ok: false, error: `invalid input for "${c.submitTool}": send {"answer": "<your final answer>"}` };
  // Taken before the grade runs: a second submit sent meanwhile (on any replica) finds the episode over.
  if (!(await c.sessions.finish(c.session, c.taskId, true))) return output('The episode is over: no tool can be called after it ends.', true);
  return graded(c, parsed.data.answer, 'Answer submitted: the episode is over.');
}

/** The episode's end, graded: `answer` (the submitted text, or none) scored as its reward. */
async function graded(c: CallInput, answer: string, text: string): Promise<CallResult> {
  try {
    // The text, parsed by the core: an answer of any depth is scored.
    const g = await c.core.grade(c.rollout, answer);
    return output(text, true, g.score, { grader: g.grader, subscores: g.subscores });
  } catch (e) {
    // Not graded: our failure (or the row's), and the episode stays ended by this task, whose rerun on the
    // reconnect grades it (the grading service records a grade once per answer). A grade fails for nothing the
    // answer holds, so no failure of it is the model's.
    return asObservation(e, 'grade');
  }
}
