import { afterEach, describe, expect, it } from 'vitest';
import { ModelClient } from '../../../src/cli/rollout/model.js';
import type { DatasetRow } from '../../../src/cli/rollout/dataset.js';
import { startScriptedModel, type ScriptedModel } from '../../helpers/scripted-model.js';

const row: DatasetRow = {
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'What was Q3 revenue?' },
  ],
  tools: [{ type: 'function', function: { name: 'search_docs', description: 'search', parameters: { type: 'object', properties: {} } } }],
};

let model: ScriptedModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

describe('ModelClient', () => {
  it('carries a Responses conversation across turns and feeds tool outputs back', async () => {
    model = await startScriptedModel({
      script: (ctx) =>
        ctx.turn === 0
          ? { calls: [{ name: 'search_docs', arguments: { query: 'q3' } }, { name: 'search_docs', arguments: { query: 'rev' } }] }
          : { text: `saw ${ctx.toolOutputs.join('+')}` },
    });
    const client = new ModelClient({ model: 'm', api: 'responses', baseURL: model.baseURL });
    const conv = client.start(row);
    const first = await conv.next([]);
    expect(first.toolCalls.map((c) => JSON.parse(c.arguments))).toEqual([{ query: 'q3' }, { query: 'rev' }]);
    const second = await conv.next(first.toolCalls.map((c, i) => ({ callId: c.callId, output: `out${i}` })));
    expect(second).toMatchObject({ toolCalls: [], text: 'saw out0+out1', finishReason: 'stop' });
    // The row's Chat Completions tools went out as flat Responses function tools.
    expect(model.requests[0]!.body.tools).toEqual([
      { type: 'function', name: 'search_docs', description: 'search', parameters: { type: 'object', properties: {} }, strict: false },
    ]);
    expect(model.requests[0]!.body.parallel_tool_calls).toBe(true);
  });

  it('falls back to Chat Completions in auto mode when /v1/responses answers 404', async () => {
    model = await startScriptedModel({
      responsesApi: false,
      script: [{ calls: [{ name: 'search_docs', arguments: { query: 'q3' } }] }, { text: 'final' }],
    });
    const client = new ModelClient({ model: 'm', api: 'auto', baseURL: model.baseURL });
    const conv = client.start(row);
    const first = await conv.next([]);
    const second = await conv.next([{ callId: first.toolCalls[0]!.callId, output: 'x' }]);
    expect(second.text).toBe('final');
    expect(client.resolvedApi).toBe('chat');
    expect(model.requests.map((r) => r.api)).toEqual(['chat', 'chat']);
  });

  it('reports an unreachable model endpoint as RFT_ERR_MODEL_API', async () => {
    model = await startScriptedModel({ responsesApi: false, script: [] });
    const client = new ModelClient({ model: 'm', api: 'chat', baseURL: model.baseURL.replace('/v1', '/nope') });
    await expect(client.start(row).next([])).rejects.toMatchObject({ code: 'RFT_ERR_MODEL_API' });
  });
});
