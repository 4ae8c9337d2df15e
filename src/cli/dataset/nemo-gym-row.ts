// An Agent RFT dataset row as NeMo Gym's row (trainer-doors.md §1): the Chat Completions `messages`
// and `tools` become `responses_create_params.input` and flat Responses function tools; every other
// field (what the grader and the tools read) stays at the top level, where Gym keeps a row's extra
// fields and sends them with /seed_session and /verify. Gym validates `responses_create_params`
// strictly (NeMoGymResponseCreateParamsNonStreaming forbids unknown keys; input messages take only
// the roles user, assistant, system, developer), so anything without an exact equivalent is refused
// here, with its line, rather than failing a collection later.
import { toResponsesTool, type ChatTool, type ResponsesFunctionTool } from '../rollout/dataset.js';

export type InputItem = Record<string, unknown>;

export interface GymRow {
  responses_create_params: { input: InputItem[]; tools: ResponsesFunctionTool[] };
  [field: string]: unknown;
}

/** A row that cannot be converted; the caller names the file and line. */
export class RowProblem extends Error {}

/**
 * Fields Gym itself writes into a row or into the /verify exchange: a dataset field of that name
 * would be overwritten (simple_agent sends `row | {response}`; the door's reply adds `reward`).
 */
const RESERVED = new Set(['responses_create_params', 'response', 'reward', 'reward_components', 'agent_ref']);

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Text content (a string or text parts) as one string; `where` names the message in the refusal. */
export function textParts(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (!Array.isArray(content)) throw new RowProblem(`${where}.content must be a string or an array of text parts`);
  return content
    .map((p, j) => {
      if (isObject(p) && p.type === 'text' && typeof p.text === 'string') return p.text;
      throw new RowProblem(`${where}.content[${j}] is not a {type: "text", text} part`);
    })
    .join('');
}

/** User, system and developer content: text and images, as Responses input parts. */
function inputContent(content: unknown, where: string): string | InputItem[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new RowProblem(`${where}.content must be a string or an array of content parts`);
  return content.map((p, j) => {
    if (isObject(p) && p.type === 'text' && typeof p.text === 'string') return { type: 'input_text', text: p.text };
    if (isObject(p) && p.type === 'image_url' && isObject(p.image_url) && typeof p.image_url.url === 'string') {
      return { type: 'input_image', image_url: p.image_url.url, detail: typeof p.image_url.detail === 'string' ? p.image_url.detail : 'auto' };
    }
    throw new RowProblem(`${where}.content[${j}] has type ${JSON.stringify(isObject(p) ? p.type : p)}, which has no Responses input equivalent (text and image_url have)`);
  });
}

function functionCalls(calls: unknown, where: string): InputItem[] {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw new RowProblem(`${where}.tool_calls must be an array`);
  return calls.map((c, j) => {
    const fn = isObject(c) ? c.function : undefined;
    if (!isObject(c) || typeof c.id !== 'string' || !isObject(fn) || typeof fn.name !== 'string') {
      throw new RowProblem(`${where}.tool_calls[${j}] is not {id, type: "function", function: {name, arguments}}`);
    }
    const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {});
    return { type: 'function_call', call_id: c.id, name: fn.name, arguments: args };
  });
}

function inputOf(messages: unknown): InputItem[] {
  if (!Array.isArray(messages) || messages.length === 0) throw new RowProblem('"messages" must be a non-empty array');
  return messages.flatMap((m, i): InputItem[] => {
    const where = `messages[${i}]`;
    if (!isObject(m) || typeof m.role !== 'string') throw new RowProblem(`${where} has no "role"`);
    switch (m.role) {
      case 'system':
      case 'developer':
      case 'user':
        return [{ role: m.role, content: inputContent(m.content, where) }];
      case 'assistant': {
        const text = textParts(m.content, where);
        // An assistant turn that only called tools has no message of its own in Responses input.
        return [...(text !== '' ? [{ role: 'assistant', content: text }] : []), ...functionCalls(m.tool_calls, where)];
      }
      case 'tool':
        if (typeof m.tool_call_id !== 'string') throw new RowProblem(`${where} (role "tool") has no "tool_call_id"`);
        return [{ type: 'function_call_output', call_id: m.tool_call_id, output: textParts(m.content, where) }];
      default:
        throw new RowProblem(`${where} has role "${m.role}", which NeMo Gym's input has no equivalent for (user, assistant, system, developer, tool)`);
    }
  });
}

function toolsOf(tools: unknown): ResponsesFunctionTool[] {
  if (tools === undefined) return [];
  if (!Array.isArray(tools)) throw new RowProblem('"tools" must be an array of {type: "function", function: {name, parameters}}');
  const seen = new Set<string>();
  return tools.map((t, i) => {
    const fn = isObject(t) ? t.function : undefined;
    if (!isObject(t) || t.type !== 'function' || !isObject(fn) || typeof fn.name !== 'string' || fn.name === '' || (fn.parameters !== undefined && !isObject(fn.parameters))) {
      throw new RowProblem(`tools[${i}] is not {type: "function", function: {name, parameters}} (Chat Completions format)`);
    }
    if (seen.has(fn.name)) throw new RowProblem(`tool "${fn.name}" is listed twice`);
    seen.add(fn.name);
    return toResponsesTool(t as ChatTool);
  });
}

export interface GymRowOptions {
  /** Sets `agent_ref` (which Gym agent plays the row); else `ng_collect_rollouts +agent_name=...` names it. */
  agent?: string;
}

/** The Gym row of one Agent RFT row; throws RowProblem. */
export function toGymRow(row: unknown, opts: GymRowOptions = {}): GymRow {
  if (!isObject(row)) throw new RowProblem('a row must be a JSON object');
  const rest: Obj = {};
  for (const [k, v] of Object.entries(row)) {
    if (k === 'messages' || k === 'tools') continue;
    if (RESERVED.has(k) || k.startsWith('_ng_')) {
      throw new RowProblem(`the row has a field "${k}", which NeMo Gym writes itself${k === 'responses_create_params' ? ' (is the file converted already?)' : ''}`);
    }
    rest[k] = v;
  }
  return {
    responses_create_params: { input: inputOf(row.messages), tools: toolsOf(row.tools) },
    ...rest,
    ...(opts.agent !== undefined ? { agent_ref: { name: opts.agent } } : {}),
  };
}
