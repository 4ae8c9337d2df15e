// The scripted model behind NeMo Gym's own model server: Gym's `openai_model` POSTs
// {openai_base_url}/responses (or /chat/completions) and validates the reply with its pydantic models
// (NeMoGymResponse, NeMoGymChatCompletion), and simple_agent resends the reply's output items on the next
// turn. The schemas are generated from Gym's models (test/fixtures/gym/README.md): a reply they refuse
// is one Gym refuses, which would stop an `ng_collect_rollouts` rehearsal at its first model call.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { startScriptedModel, type ScriptedModel, type ScriptedModelOptions } from '../../helpers/scripted-model.js';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../../fixtures/gym/${name}`, import.meta.url), 'utf8')) as object;
// strict: false: pydantic writes OpenAPI's `discriminator` beside its oneOf, a keyword ajv skips (the oneOf still checks).
const ajv = new Ajv2020({ strict: false, allErrors: true });
const gymResponse = ajv.compile(fixture('response.schema.json'));
const gymChatCompletion = ajv.compile(fixture('chat-completion.schema.json'));

type Item = Record<string, unknown>;

let model: ScriptedModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

async function post(path: string, body: Item): Promise<Item> {
  const res = await fetch(`${model!.baseURL}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer EMPTY' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Item;
}

function expectValid(validate: ValidateFunction, reply: Item) {
  const ok = validate(reply);
  expect(ok ? [] : validate.errors!.map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`)).toEqual([]);
  // Gym's one check a JSON schema cannot state (a before-validator on NeMoGymResponse.output): every
  // output item names its type, so none is coerced into the wrong member of the union.
  for (const item of (reply.output as Item[] | undefined) ?? []) expect(typeof item.type).toBe('string');
}

const searchTool = {
  type: 'function',
  name: 'search_docs',
  description: 'Search the filings.',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'], additionalProperties: false },
  strict: true,
};

/**
 * One simple_agent episode as Gym runs it: the row's responses_create_params with `input` grown by each
 * reply's output items and a function_call_output per call, `model` set by openai_model; every reply
 * checked against NeMoGymResponse. Returns the replies.
 */
async function gymEpisode(params: Item, maxSteps = 5): Promise<Item[]> {
  const input: Item[] = typeof params.input === 'string' ? [{ role: 'user', content: params.input }] : [...(params.input as Item[])];
  const replies: Item[] = [];
  for (let step = 0; step < maxSteps; step++) {
    const reply = await post('/responses', { ...params, input, model: 'policy' });
    expectValid(gymResponse, reply);
    replies.push(reply);
    const output = reply.output as Item[];
    input.push(...output);
    const calls = output.filter((o) => o.type === 'function_call');
    if (calls.length === 0) break;
    for (const c of calls) input.push({ type: 'function_call_output', call_id: c.call_id, output: '{"hits": 1}' });
  }
  return replies;
}

const script: ScriptedModelOptions['script'] = (ctx) =>
  ctx.turn === 0
    ? { calls: [{ name: 'search_docs', arguments: { query: ctx.userText } }, { name: 'search_docs', arguments: '{"query":' }] }
    : ctx.turn === 1
      ? { calls: [{ name: 'search_docs', arguments: { query: 'again' } }], text: 'Looking once more.' }
      : { text: `Answer: ${ctx.toolOutputs.length}` };

describe('the scripted model, as NeMo Gym\'s openai_model reads it', () => {
  it('answers every turn of a tool-calling episode with a reply NeMoGymResponse accepts', async () => {
    model = await startScriptedModel({ script });
    const replies = await gymEpisode({
      input: [
        { role: 'system', content: 'You answer questions about filings.' },
        { role: 'user', content: 'What was Q1 revenue?', type: 'message' },
      ],
      tools: [searchTool],
      parallel_tool_calls: true,
      temperature: 1,
    });
    // Parallel calls, calls with text, then the final answer: every kind of output the script makes.
    expect(replies.map((r) => (r.output as Item[]).map((o) => o.type))).toEqual([
      ['function_call', 'function_call'],
      ['function_call', 'message'],
      ['message'],
    ]);
    expect(replies.at(-1)!.output).toMatchObject([{ content: [{ type: 'output_text', text: 'Answer: 1' }] }]);
  });

  it('reports usage with its token details and echoes the request\'s tool_choice', async () => {
    model = await startScriptedModel({ script: [{ text: 'done' }] });
    const [auto] = await gymEpisode({ input: 'hi' });
    expect(auto!.tool_choice).toBe('auto');
    expect(auto!.usage).toMatchObject({ input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } });
    const [required] = await gymEpisode({ input: 'hi', tools: [searchTool], tool_choice: 'required', parallel_tool_calls: false });
    expect(required).toMatchObject({ tool_choice: 'required', parallel_tool_calls: false, tools: [searchTool] });
  });

  it('answers a flooded reply in the same shape', async () => {
    model = await startScriptedModel({ script: [], flood: { bytes: 10 } });
    expectValid(gymResponse, await post('/responses', { input: 'hi', model: 'policy' }));
  });

  it('answers Chat Completions with a reply NeMoGymChatCompletion accepts', async () => {
    model = await startScriptedModel({ script });
    const messages: Item[] = [{ role: 'user', content: 'What was Q1 revenue?' }];
    const tools = [{ type: 'function', function: { name: 'search_docs', parameters: searchTool.parameters } }];
    for (let step = 0; step < 3; step++) {
      const reply = await post('/chat/completions', { model: 'policy', messages, tools });
      expectValid(gymChatCompletion, reply);
      const message = (reply.choices as { message: Item }[])[0]!.message;
      messages.push(message);
      for (const c of (message.tool_calls as Item[] | undefined) ?? []) messages.push({ role: 'tool', tool_call_id: c.id, content: 'out' });
    }
  });

  it('the schema refuses a reply Gym refuses (the check can fail)', () => {
    const reply = {
      id: 'resp_1', object: 'response', created_at: 0, model: 'policy', parallel_tool_calls: true, tool_choice: 'auto', tools: [],
      output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'x', annotations: [] }] }],
      usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
    };
    expect(gymResponse(reply)).toBe(true);
    expect(gymResponse({ ...reply, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } })).toBe(false);
    const { tool_choice: _, ...noToolChoice } = reply;
    expect(gymResponse(noToolChoice)).toBe(false);
    expect(gymResponse({ ...reply, usage: { ...reply.usage, output_tokens_details: {} } })).toBe(false);
  });
});
