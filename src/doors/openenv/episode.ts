// One OpenEnv episode: a rollout of the core opened by a reset, its steps and its end. A step's reply is
// OpenEnv's serialized observation (serialization.py serialize_observation: {observation, reward, done});
// the model's mistakes (an unknown tool, bad arguments, a failing tool, a spent budget) are observations
// shaped as OpenEnv's MCPEnvironment shapes them (mcp_environment.py _async_handle_call_tool). A failure
// of ours is thrown as a coded RftError (the socket answers an `error` frame, HTTP a 5xx) and marks the
// episode broken: its submit then answers RFT_ERR_OPENENV_ROLLOUT_LOST, never a reward for an episode the
// model did not play.
import { errors, isRftError, type RftError } from '../../errors.js';
import { failureClass, NO_ANSWER, type DoorCore, type Rollout, type UnansweredEnd } from '../core.js';
import { graderItem, promptOf, rowToolSpecs, SUBMIT_SPEC, SUBMIT_TOOL, type PickedRow, type ToolSpec } from './rows.js';
import { timeOrderedId } from '../../rollout/ids.js';
import type { ToolCallOutcome } from '../../ledger/ledger.js';

export const OPENENV_DOOR = 'openenv';

/** serialize_observation's shape. */
export interface StepData {
  observation: Record<string, unknown>;
  reward: number | null;
  done: boolean;
}

type ToolErrorType = 'execution_error' | 'invalid_args' | 'tool_not_found' | 'timeout';

/** fastmcp's CallToolResult as OpenEnv serializes it (http_server.py _make_json_serializable). */
export function callToolResult(text: string, isError: boolean, structured: Record<string, unknown> | null = null): Record<string, unknown> {
  return { content: [{ type: 'text', text }], structured_content: structured, meta: null, data: text, is_error: isError };
}

const toolObservation = (tool: string, result: Record<string, unknown> | null, error: { error_type: ToolErrorType; message: string } | null) => ({
  tool_name: tool,
  result,
  error,
});

/** A step the model's mistake (or the episode's end) refused: MCPEnvironment's error observation. */
const failed = (tool: string, type: ToolErrorType, message: string, done = false, reward: number | null = null): StepData => ({
  observation: toolObservation(tool, null, { error_type: type, message }),
  reward,
  done,
});

/** A call after the episode ended: not run, the episode's reward again. */
export const overStep = (tool: string, reward: number | null): StepData =>
  failed(tool, 'execution_error', 'The episode is over: no tool can be called after it ends.', true, reward);

/** The episode's last step: the submit's (or the spent budget's) text and the grade's reward. */
export const endStep = (tool: string, text: string, reward: number): StepData => ({
  observation: toolObservation(tool, callToolResult(text, tool !== SUBMIT_TOOL), null),
  reward,
  done: true,
});

export const SUBMITTED = 'Answer submitted: the episode is over.';

/** The answer a submit's arguments carry, or its invalid_args step. */
export function submittedAnswer(args: unknown): string | StepData {
  const answer = (args as { answer?: unknown } | null)?.answer;
  return typeof answer === 'string' ? answer : failed(SUBMIT_TOOL, 'invalid_args', `Tool '${SUBMIT_TOOL}' takes {"answer": string}.`);
}

/** A tool call the rollout does not offer. */
export const notFoundStep = (name: string, tools: Iterable<string>): StepData =>
  failed(name, 'tool_not_found', `Tool '${name}' not found; the tools are ${[...tools, SUBMIT_TOOL].join(', ')}.`);

/** A tool's outcome as its step; undefined for a spent budget, which ends the episode (the caller grades it). */
export function outcomeStep(name: string, outcome: ToolCallOutcome): StepData | undefined {
  switch (outcome.status) {
    case 'ok':
      return { observation: toolObservation(name, callToolResult(outcome.output, false), null), reward: null, done: false };
    case 'invalid_arguments':
      return failed(name, 'invalid_args', outcome.output);
    case 'timeout':
      return failed(name, 'timeout', outcome.output);
    case 'budget_exceeded':
      return undefined;
    default:
      return failed(name, 'execution_error', outcome.output);
  }
}

/** A reset's reply: the row's prompt and where it came from, nothing of what the grader reads. */
export function resetObservation(environment: string, picked: PickedRow, episodeId: string | undefined): StepData {
  const { messages, prompt } = promptOf(picked.row);
  const about = { episode_id: episodeId ?? null, environment, split: picked.split, index: picked.index };
  // MCPToolClient keeps only `metadata` of an observation without tool_name or tools (mcp_client.py _parse_result).
  return { observation: { prompt, messages, ...about, metadata: { prompt, messages, ...about } }, reward: null, done: false };
}

export class Episode {
  readonly episodeId: string;
  readonly tools: ToolSpec[];
  stepCount = 0;
  private calls = 0;
  done = false;
  reward: number | null = null;
  broken: RftError | undefined;
  private closed = false;

  private constructor(
    private readonly core: DoorCore,
    readonly environment: string,
    readonly picked: PickedRow,
    readonly rollout: Rollout,
    episodeId: string | undefined,
  ) {
    this.episodeId = episodeId ?? rollout.traceId;
    this.tools = [...rowToolSpecs(picked.row), SUBMIT_SPEC];
  }

  /** Opens the rollout (its record, and its sandbox started now: the model's first turn hides its cost). */
  static async start(core: DoorCore, environment: string, picked: PickedRow, episodeId: string | undefined, run?: string): Promise<Episode> {
    const specs = rowToolSpecs(picked.row);
    const rollout = await core.start({
      traceId: timeOrderedId('oe_'),
      door: OPENENV_DOOR,
      row: { ...graderItem(picked.row), ...(episodeId === undefined ? {} : { _openenv_episode_id: episodeId }) },
      tools: specs.map((t) => t.name),
      environment,
      warmSandbox: true,
      run,
    });
    return new Episode(core, environment, picked, rollout, episodeId);
  }

  /** The reset reply: the prompt. */
  resetData(): StepData {
    return resetObservation(this.environment, this.picked, this.episodeId);
  }

  state(): Record<string, unknown> {
    const { split, index } = this.picked;
    return {
      episode_id: this.episodeId,
      step_count: this.stepCount,
      environment: this.environment,
      split,
      index,
      trace_id: this.rollout.traceId,
      done: this.done,
      reward: this.reward,
    };
  }

  listTools(): StepData {
    this.stepCount++;
    return { observation: { tools: this.tools }, reward: null, done: false };
  }

  /** A call_tool action (the step's `tool_name` and `arguments`). */
  async callTool(name: string, args: unknown): Promise<StepData> {
    this.stepCount++;
    if (this.done) return overStep(name, this.reward);
    if (name === SUBMIT_TOOL) return this.submit(args);
    if (!this.rollout.tools.has(name)) return notFoundStep(name, this.rollout.tools);
    const outcome = await this.ours(() => this.core.callTool(this.rollout, `oe-${++this.calls}`, name, args));
    // A spent budget ends the episode (trainer-doors.md §3): graded as it stands, with no answer.
    return outcomeStep(name, outcome) ?? this.end(name, outcome.output, NO_ANSWER);
  }

  private async submit(args: unknown): Promise<StepData> {
    const answer = submittedAnswer(args);
    return typeof answer === 'string' ? this.end(SUBMIT_TOOL, SUBMITTED, answer) : answer;
  }

  private async end(tool: string, text: string, answer: string): Promise<StepData> {
    if (this.broken) throw errors.openenvRolloutLost(this.broken.code);
    return endStep(tool, text, await this.grade(answer));
  }

  /** The answer's text, parsed by the core: an answer of any depth is scored. */
  private async grade(answer: string): Promise<number> {
    const g = await this.ours(() => this.core.grade(this.rollout, answer));
    this.done = true;
    this.reward = g.score;
    return g.score;
  }

  /**
   * The episode ends without an answer (`end`: its client reset or closed, it sat idle, or our shutdown):
   * graded with the empty answer or not by the core's rule (DoorCore.gradesUnanswered), as a spent budget
   * is, so the record holds the reward a trainer gets for it (the snippet's get_reward submits the same
   * empty answer). A broken episode, or one our shutdown ended, stays ungraded.
   */
  async endUnanswered(end: UnansweredEnd): Promise<void> {
    const g = await this.ours(() => this.core.endUnanswered(this.rollout, end, { answered: this.done, broken: this.broken !== undefined }));
    if (!g) return;
    this.done = true;
    this.reward = g.score;
  }

  /** Runs a step of the core; a failure of ours breaks the episode and is thrown (an `error` frame, or HTTP's 5xx). */
  private async ours<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      const err = isRftError(e) ? e : errors.internal((e as Error).message);
      if (failureClass(err, 'call') === 'ours') this.broken ??= err;
      throw err;
    }
  }

  /** Ends the rollout now (its sandbox goes) unless it was graded: a graded one ends by itself after the grace period. */
  async close(): Promise<void> {
    if (this.done || this.closed) return;
    this.closed = true;
    await this.core.end(this.rollout);
  }
}

