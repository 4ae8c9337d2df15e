// The model side of an emulated rollout, behind one small interface so the runner does not care
// whether it talks to the Responses API or to Chat Completions. The whole conversation is resent
// each turn (no previous_response_id), so any OpenAI-compatible server works, stored or not.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { loadCliEnv } from '../../config.js';
import { errors, isRftError } from '../../errors.js';
import { cappedFetch, DEFAULT_MAX_REPLY_BYTES } from '../../grading/reply-cap.js';
import { toResponsesTool, type DatasetMessage, type DatasetRow } from './dataset.js';

export type ModelApi = 'responses' | 'chat' | 'auto';

export interface ToolCallRequest {
  /** The function_call item id (`fc_...`); Chat Completions has none, so one is made up. */
  id: string;
  callId: string;
  name: string;
  arguments: string;
}

export interface ModelTurn {
  toolCalls: ToolCallRequest[];
  text: string;
  finishReason: string;
  /** The Responses API's reply as it came (its `output` items verbatim); none from Chat Completions. */
  response?: Record<string, unknown>;
}

export interface ToolOutput {
  callId: string;
  output: string;
}

export interface Conversation {
  /** The next model turn, after feeding back the outputs of the previous turn's tool calls. */
  next(outputs: ToolOutput[]): Promise<ModelTurn>;
}

export interface ModelOptions {
  model: string;
  api: ModelApi;
  /** From modelEndpoint(): always explicit, so the SDK never falls back to its own default. */
  baseURL: string;
  apiKey?: string;
  /** Largest reply body read from the endpoint (--max-reply-bytes; default DEFAULT_MAX_REPLY_BYTES). */
  maxReplyBytes?: number;
  /** Sent only when set (--temperature, --reasoning-effort), so a model keeps its own defaults. */
  temperature?: number;
  reasoningEffort?: string;
}

type Sampling = Pick<ModelOptions, 'temperature' | 'reasoningEffort'>;

/** The sampling fields of a request body, as each API names them. */
function samplingParams(s: Sampling, api: 'responses' | 'chat'): Record<string, unknown> {
  const effort = s.reasoningEffort === undefined ? {} : api === 'responses' ? { reasoning: { effort: s.reasoningEffort } } : { reasoning_effort: s.reasoningEffort };
  return { ...(s.temperature !== undefined ? { temperature: s.temperature } : {}), ...effort };
}

export const OPENAI_API_BASE = 'https://api.openai.com/v1';

/**
 * Where the model is: --base-url, else OPENAI_BASE_URL, else the OpenAI API when OPENAI_API_KEY is
 * set. Nothing named at all is an error: the SDK's default address with a placeholder key would only
 * discard every rollout.
 */
export function modelEndpoint(baseUrl: string | undefined): { baseURL: string; apiKey?: string } {
  const env = loadCliEnv();
  const baseURL = baseUrl ?? env.OPENAI_BASE_URL ?? (env.OPENAI_API_KEY ? OPENAI_API_BASE : undefined);
  if (!baseURL) throw errors.modelConfig();
  return { baseURL, ...(env.OPENAI_API_KEY ? { apiKey: env.OPENAI_API_KEY } : {}) };
}

export class ModelClient {
  private readonly openai: OpenAI;
  private readonly model: string;
  private readonly sampling: Sampling;
  /** Settled on the first successful call in auto mode, then shared by every rollout. */
  private api: ModelApi;

  constructor(opts: ModelOptions) {
    this.openai = new OpenAI({
      // A local OpenAI-compatible server usually needs no key; the SDK refuses to start without one.
      apiKey: opts.apiKey ?? 'unused',
      baseURL: opts.baseURL,
      fetch: cappedFetch(opts.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES, errors.modelReplyTooLarge),
    });
    this.model = opts.model;
    this.sampling = { ...(opts.temperature !== undefined ? { temperature: opts.temperature } : {}), ...(opts.reasoningEffort !== undefined ? { reasoningEffort: opts.reasoningEffort } : {}) };
    this.api = opts.api;
  }

  /** The model name requests carry. */
  get name(): string {
    return this.model;
  }

  get resolvedApi(): ModelApi {
    return this.api;
  }

  start(row: DatasetRow): Conversation {
    const rawResponses = () => new ResponsesConversation(this.openai, this.model, row, this.sampling);
    const responses = () => coded('responses', rawResponses());
    const chat = () => coded('chat', new ChatConversation(this.openai, this.model, row, this.sampling));
    if (this.api === 'responses') return responses();
    if (this.api === 'chat') return chat();
    // auto: the first turn decides; a 404 there means "no Responses API here", not a lost turn.
    let current: Conversation | null = null;
    return {
      next: async (outputs) => {
        if (current) return current.next(outputs);
        if (this.api === 'chat') return (current = chat()).next(outputs);
        const attempt = rawResponses();
        try {
          const turn = await attempt.next(outputs);
          current = coded('responses', attempt);
          this.api = 'responses';
          return turn;
        } catch (e) {
          if (!(e instanceof OpenAI.NotFoundError)) throw toModelError('responses', e);
          this.api = 'chat';
          return (current = chat()).next(outputs);
        }
      },
    };
  }
}

type InputItem = Record<string, unknown>;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p: unknown) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : ''))
      .join('');
  }
  return '';
}

/** Chat messages to Responses input items, including any tool calls a dataset row already holds. */
export function toResponsesInput(messages: DatasetMessage[]): InputItem[] {
  const items: InputItem[] = [];
  for (const m of messages) {
    if (m.role === 'tool') {
      items.push({ type: 'function_call_output', call_id: String(m.tool_call_id ?? ''), output: textOf(m.content) });
      continue;
    }
    const text = textOf(m.content);
    if (m.role !== 'assistant' || text !== '') items.push({ role: m.role, content: text });
    const calls = Array.isArray(m.tool_calls) ? (m.tool_calls as { id?: string; function?: { name?: string; arguments?: string } }[]) : [];
    for (const c of calls) {
      items.push({ type: 'function_call', call_id: c.id ?? '', name: c.function?.name ?? '', arguments: c.function?.arguments ?? '{}' });
    }
  }
  return items;
}

function toModelError(api: string, e: unknown): Error {
  return isRftError(e) ? e : errors.modelApi(api, e instanceof Error ? e.message : String(e));
}

/** SDK errors become coded errors; auto mode talks to the raw conversation to see a 404 as such. */
function coded(api: string, c: Conversation): Conversation {
  return {
    next: async (outputs) => {
      try {
        return await c.next(outputs);
      } catch (e) {
        throw toModelError(api, e);
      }
    },
  };
}

class ResponsesConversation implements Conversation {
  private readonly input: InputItem[];
  private readonly tools: unknown[];

  constructor(
    private readonly openai: OpenAI,
    private readonly model: string,
    row: DatasetRow,
    private readonly sampling: Sampling,
  ) {
    this.input = toResponsesInput(row.messages);
    this.tools = (row.tools ?? []).map(toResponsesTool);
  }

  async next(outputs: ToolOutput[]): Promise<ModelTurn> {
    for (const o of outputs) this.input.push({ type: 'function_call_output', call_id: o.callId, output: o.output });
    const params = {
      model: this.model,
      input: this.input,
      ...samplingParams(this.sampling, 'responses'),
      ...(this.tools.length > 0 ? { tools: this.tools, parallel_tool_calls: true } : {}),
    } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming;
    const res = await this.openai.responses.create(params);
    const toolCalls: ToolCallRequest[] = [];
    let text = '';
    for (const item of res.output) {
      // Output items go back verbatim, as the Responses API asks for multi-turn input.
      this.input.push(item as unknown as InputItem);
      if (item.type === 'function_call') {
        toolCalls.push({ id: item.id ?? `fc_${randomUUID()}`, callId: item.call_id, name: item.name, arguments: item.arguments });
      } else if (item.type === 'message') {
        for (const part of item.content) if (part.type === 'output_text') text += part.text;
      }
    }
    const finishReason = toolCalls.length > 0 ? 'tool_calls' : res.status === 'incomplete' ? 'length' : 'stop';
    return { toolCalls, text, finishReason, response: res as unknown as Record<string, unknown> };
  }
}

class ChatConversation implements Conversation {
  private readonly messages: unknown[];
  private readonly tools: unknown[];

  constructor(
    private readonly openai: OpenAI,
    private readonly model: string,
    row: DatasetRow,
    private readonly sampling: Sampling,
  ) {
    this.messages = [...row.messages];
    this.tools = row.tools ?? [];
  }

  async next(outputs: ToolOutput[]): Promise<ModelTurn> {
    for (const o of outputs) this.messages.push({ role: 'tool', tool_call_id: o.callId, content: o.output });
    const params = {
      model: this.model,
      messages: this.messages,
      ...samplingParams(this.sampling, 'chat'),
      ...(this.tools.length > 0 ? { tools: this.tools, parallel_tool_calls: true } : {}),
    } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
    const res = await this.openai.chat.completions.create(params);
    const choice = res.choices[0];
    if (!choice) throw errors.modelApi('chat', 'reply has no choices');
    const calls = (choice.message.tool_calls ?? []).filter((c) => c.type === 'function');
    this.messages.push({
      role: 'assistant',
      content: choice.message.content ?? null,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    });
    return {
      toolCalls: calls.map((c) => ({ id: `fc_${randomUUID()}`, callId: c.id, name: c.function.name, arguments: c.function.arguments })),
      text: choice.message.content ?? '',
      finishReason: choice.finish_reason,
    };
  }
}
