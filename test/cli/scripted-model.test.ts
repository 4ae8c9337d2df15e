import { afterEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startScriptedModel, type ScriptedModel } from '../helpers/scripted-model.js';

let model: ScriptedModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

const twoTurns = [{ calls: [{ name: 'a', arguments: { x: 1 } }, { name: 'b', arguments: '{"y":' }] }, { text: 'final' }];

describe('the scripted model server', () => {
  it('continues a Responses conversation through previous_response_id', async () => {
    model = await startScriptedModel({ script: (ctx) => (ctx.turn === 0 ? twoTurns[0]! : { text: `got ${ctx.toolOutputs.join(',')}` }) });
    const openai = new OpenAI({ apiKey: 'unused', baseURL: model.baseURL });
    const first = await openai.responses.create({ model: 'm', input: 'hi' });
    const calls = first.output.filter((o) => o.type === 'function_call');
    expect(calls.map((c) => [c.name, c.arguments])).toEqual([['a', '{"x":1}'], ['b', '{"y":']]);
    const second = await openai.responses.create({
      model: 'm',
      previous_response_id: first.id,
      input: calls.map((c, i) => ({ type: 'function_call_output' as const, call_id: c.call_id, output: `o${i}` })),
    });
    expect(second.output_text).toBe('got o0,o1');
  });

  it('answers Chat Completions with tool_calls, then with the final text', async () => {
    model = await startScriptedModel({ script: twoTurns });
    const openai = new OpenAI({ apiKey: 'unused', baseURL: model.baseURL });
    const first = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    const calls = first.choices[0]!.message.tool_calls!;
    expect(calls).toHaveLength(2);
    const second = await openai.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'hi' },
        first.choices[0]!.message,
        ...calls.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: 'out' })),
      ],
    });
    expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'final' } });
  });

  it('answers 404 on /v1/responses when the Responses API is turned off', async () => {
    model = await startScriptedModel({ script: twoTurns, responsesApi: false });
    const openai = new OpenAI({ apiKey: 'unused', baseURL: model.baseURL, maxRetries: 0 });
    await expect(openai.responses.create({ model: 'm', input: 'hi' })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});
