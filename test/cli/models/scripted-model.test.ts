import { afterEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startScriptedModel, type ScriptedModel } from '../../helpers/scripted-model.js';

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

describe('the scripted model server: conversations', () => {
  it('keeps one conversation id across the turns of each of many conversations (both APIs)', async () => {
    const seen: [string, number, string][] = []; // [api, turn, conversation]
    model = await startScriptedModel({
      script: (ctx) => {
        seen.push([ctx.api, ctx.turn, ctx.conversation]);
        return ctx.turn === 0 ? { calls: [{ name: 'a', arguments: {} }, { name: 'b', arguments: {} }] } : { text: ctx.conversation };
      },
    });
    const openai = new OpenAI({ apiKey: 'unused', baseURL: model.baseURL });
    // Enough conversations for ids to run through every base-36 digit, several times.
    for (let i = 0; i < 60; i++) {
      const first = await openai.responses.create({ model: 'm', input: `q${i}` });
      const calls = first.output.filter((o) => o.type === 'function_call');
      const second = await openai.responses.create({
        model: 'm',
        input: [{ role: 'user' as const, content: `q${i}` }, ...calls, ...calls.map((c) => ({ type: 'function_call_output' as const, call_id: c.call_id, output: 'x' }))],
      });
      const c1 = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `q${i}` }] });
      const msg = c1.choices[0]!.message;
      const c2 = await openai.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: `q${i}` }, msg, ...msg.tool_calls!.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: 'x' }))],
      });
      const [r0, r1, k0, k1] = seen.slice(-4);
      expect([r1![1], k1![1]]).toEqual([1, 1]);
      expect(second.output_text).toBe(r0![2]);
      expect(c2.choices[0]!.message.content).toBe(k0![2]);
      expect(r0![2]).not.toBe(k0![2]);
    }
    expect(new Set(seen.filter((s) => s[1] === 0).map((s) => s[2])).size).toBe(120);
  });
});
