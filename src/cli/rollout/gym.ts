// One emulated rollout through the NeMo Gym door, played as Gym's simple_agent plays it
// (responses_api_agents/simple_agent/app.py `run` and `_create_episode`, Gym 07d6b0d):
// - POST /seed_session with the run request (the row, `responses_create_params` with pydantic's
//   defaults filled in, agent_ref, _ng_task_index, _ng_rollout_index); a non-2xx fails the rollout;
// - model turns; each function_call in order, one at a time: POST /{name} with the parsed arguments
//   (arguments that do not parse never reach the door: the model reads simple_agent's own error),
//   the reply body as the output whatever its status; the cookies sent are those of the previous
//   reply's Set-Cookie alone (no jar), starting from the seed reply's;
// - the episode ends on a turn with no call and an assistant message, an incomplete turn (its calls
//   not run), or after the calls of turn max_steps;
// - POST /verify with the run request plus `response`, the last model response whose `output` is the
//   whole episode; the reward is the reply's. A non-2xx or a reply simple_agent's pydantic model would
//   refuse fails the rollout, and so does a `reward_components` sum NeMo RL would refuse.
import { randomUUID } from 'node:crypto';
import { SESSION_COOKIE } from '../../doors/nemo-gym/app.js';
import { traceIdOf } from '../../doors/nemo-gym/sessions.js';
import { errors } from '../../errors.js';
import type { DatasetRow } from './dataset.js';
import type { InputItem, GymRow } from '../dataset/nemo-gym-row.js';
import type { Cookies, DoorReply, GymDoorClient } from './gym-http.js';
import type { ModelTurn, ToolOutput } from './model.js';
import { discard, newResult, settle, type RolloutDeps, type RolloutResult } from './run.js';
import { Stopwatch } from './stopwatch.js';

export interface GymSide {
  /** runGymRollout, loaded only for --door nemo-gym (it brings the door's session module). */
  run: typeof runGymRollout;
  door: GymDoorClient;
  /** The agent_ref name ng_collect_rollouts gives rows without one (+agent_name). */
  agent: string;
  /** The Gym row of each dataset row, same order. */
  rows: GymRow[];
}

export interface GymRolloutResult extends RolloutResult {
  /** `_ng_failure_class` of the /verify reply (Gym's judge_failed): collection files it apart. */
  failure_class: string | null;
}

/** What pydantic's model_dump() of NeMoGymResponseCreateParamsNonStreaming adds to a row's params. */
const CREATE_PARAMS_DEFAULTS = {
  background: null, include: null, instructions: null, max_output_tokens: null, max_tool_calls: null, metadata: null,
  model: null, parallel_tool_calls: true, previous_response_id: null, prompt: null, reasoning: null, service_tier: null,
  store: null, temperature: null, text: null, tool_choice: 'auto', top_logprobs: null, top_p: null, truncation: null,
  user: null, stream: null,
};

/** An input item as model_dump() writes it: a message gets its `type`, a call or output its null id and status. */
function dumpedItem(item: InputItem): InputItem {
  if (item.type === 'function_call' || item.type === 'function_call_output') return { id: null, status: null, ...item };
  return 'role' in item ? { type: 'message', ...item } : item;
}

/** The body simple_agent's `run` posts to /seed_session and, plus `response`, to /verify. */
export function runRequest(row: GymRow, agent: string, taskIndex: number, rolloutIndex: number): Record<string, unknown> {
  const params = row.responses_create_params;
  return {
    ...row,
    responses_create_params: { ...CREATE_PARAMS_DEFAULTS, ...params, input: params.input.map(dumpedItem) },
    agent_ref: row.agent_ref ?? { name: agent },
    _ng_task_index: taskIndex,
    _ng_rollout_index: rolloutIndex,
  };
}

/** A Chat Completions turn as the Responses output items simple_agent would have received. */
function itemsOf(turn: ModelTurn): InputItem[] {
  if (turn.response) return turn.response.output as InputItem[];
  const message = { type: 'message', id: `msg_${randomUUID()}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: turn.text, annotations: [] }] };
  const calls = turn.toolCalls.map((c) => ({ type: 'function_call', id: c.id, call_id: c.callId, name: c.name, arguments: c.arguments, status: 'completed' }));
  return [...(turn.text !== '' || calls.length === 0 ? [message] : []), ...calls];
}

const incomplete = (turn: ModelTurn) => (turn.response ? turn.response.incomplete_details != null : turn.finishReason === 'length');

/** The parsed arguments, or the output simple_agent gives the model instead of calling the door. */
function parseArguments(args: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(args) as unknown };
  } catch (e) {
    // simple_agent: json.dumps({"error": f"Invalid tool call arguments: {e!r}"}); the parser's message is ours.
    return { error: `{"error": ${JSON.stringify(`Invalid tool call arguments: JSONDecodeError('${(e as Error).message}')`)}}` };
  }
}

interface Episode {
  turns: ModelTurn[];
  output: InputItem[];
  toolCalls: number;
  maxStepsReached: boolean;
  cookies: Cookies;
}

async function post(door: GymDoorClient, sw: Stopwatch, path: string, body: unknown, cookies: Cookies): Promise<DoorReply> {
  return sw.wait(door.send('POST', path, body, cookies));
}

async function playEpisode(item: DatasetRow, deps: RolloutDeps, gym: GymSide, sw: Stopwatch, e: Episode): Promise<void> {
  const conversation = deps.model.start(item);
  let outputs: ToolOutput[] = [];
  for (let step = 1; ; step++) {
    const turn = await sw.wait(conversation.next(outputs));
    const items = itemsOf(turn);
    e.turns.push(turn);
    e.output.push(...items);
    if (incomplete(turn)) return;
    // A turn with neither a call nor a message (reasoning alone) asks the model again.
    if (turn.toolCalls.length === 0 && items.some((i) => i.type === 'message' && i.role === 'assistant')) return;
    outputs = [];
    for (const call of turn.toolCalls) {
      const args = parseArguments(call.arguments);
      let output: string;
      if ('error' in args) {
        output = args.error;
      } else {
        // aiohttp sends no body at all for json=None (arguments "null").
        const reply = await post(gym.door, sw, `/${call.name}`, args.value === null ? undefined : args.value, e.cookies);
        output = reply.text;
        e.cookies = reply.cookies;
      }
      e.toolCalls++;
      e.output.push({ type: 'function_call_output', call_id: call.callId, output, id: null, status: null });
      outputs.push({ callId: call.callId, output });
    }
    if (step >= deps.maxSteps) {
      e.maxStepsReached = true;
      return;
    }
  }
}

/** The `response` of /verify: the last model response, its output the whole episode. */
function episodeResponse(e: Episode, row: GymRow, model: string): Record<string, unknown> {
  const last = e.turns.at(-1)?.response;
  const base = last ?? {
    id: `resp_${randomUUID()}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model,
    status: 'completed',
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: row.responses_create_params.tools,
  };
  return { ...base, output: e.output };
}

/** The reward of a /verify reply, checked as simple_agent and NeMo RL check it. */
export function rewardOf(reply: DoorReply): { reward: number; failureClass: string | null } {
  if (reply.status < 200 || reply.status >= 300) throw errors.rolloutDiscarded(`/verify answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(reply.text) as Record<string, unknown>;
  } catch {
    throw errors.rolloutDiscarded(`/verify reply is not JSON: ${reply.text.slice(0, 300)}`);
  }
  const reward = body.reward;
  // SimpleAgentVerifyResponse: the request echoed (responses_create_params, response) plus reward.
  if (typeof reward !== 'number' || typeof body.responses_create_params !== 'object' || typeof body.response !== 'object') {
    throw errors.rolloutDiscarded(`/verify reply lacks a numeric reward or the echoed request, which simple_agent refuses: ${reply.text.slice(0, 300)}`);
  }
  const components = body.reward_components;
  if (components !== undefined && components !== null) {
    const sum = Object.values(components as Record<string, number>).reduce((s, v) => s + v, 0);
    // nemo_rl/environments/nemo_gym.py validate_reward_components_match_scalar: math.isclose(rel 1e-5, abs 1e-6).
    if (!(Math.abs(reward - sum) <= Math.max(1e-5 * Math.max(Math.abs(reward), Math.abs(sum)), 1e-6))) {
      throw errors.rolloutDiscarded(`/verify reward ${reward} is not the sum of its reward_components (${sum}), which NeMo RL refuses`);
    }
  }
  return { reward, failureClass: typeof body._ng_failure_class === 'string' ? body._ng_failure_class : null };
}

/** The rollout's id in the server's record, derived from the session token the door set as its cookie. */
function recordIdOf(cookies: Cookies): string {
  const token = cookies.get(SESSION_COOKIE);
  return token === undefined ? '' : traceIdOf(token);
}

export async function runGymRollout(row: number, tryIndex: number, item: DatasetRow, deps: RolloutDeps, gym: GymSide): Promise<GymRolloutResult> {
  const sw = new Stopwatch();
  const t0 = performance.now();
  const result: GymRolloutResult = { ...newResult(row, tryIndex, ''), failure_class: null };
  const gymRow = gym.rows[row]!;
  const run = runRequest(gymRow, gym.agent, row, tryIndex);
  const e: Episode = { turns: [], output: [], toolCalls: 0, maxStepsReached: false, cookies: new Map() };
  try {
    const seed = await post(gym.door, sw, '/seed_session', run, new Map());
    if (seed.status < 200 || seed.status >= 300) throw errors.rolloutDiscarded(`/seed_session answered ${seed.status}: ${seed.text.slice(0, 300)}`);
    e.cookies = seed.cookies;
    result.trace_id = recordIdOf(seed.cookies);
    await playEpisode(item, deps, gym, sw, e);
    const verified = rewardOf(await post(gym.door, sw, '/verify', { ...run, response: episodeResponse(e, gymRow, deps.model.name) }, e.cookies));
    result.score = verified.reward;
    result.failure_class = verified.failureClass;
  } catch (err) {
    discard(result, err);
  }
  await settle(result, e, deps.server, sw, t0);
  return result;
}
