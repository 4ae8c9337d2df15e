// The grader's `sample`, shaped as the trainer sends it (wire contract §3). Whether `output_tools`
// holds every call of the rollout or only the last turn's is undocumented; we send every call, in
// order, which is the superset a grader can always narrow down. `choices` holds the final turn.
import type { Sample } from '../../protocol/wire.js';
import type { ModelTurn } from './model.js';

function parseJsonOutput(text: string): unknown {
  const t = text.trim();
  if (!t.startsWith('{') && !t.startsWith('[')) return null;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return null;
  }
}

export function buildSample(turns: ModelTurn[]): Sample {
  const last = turns.at(-1);
  const asToolCall = (c: ModelTurn['toolCalls'][number]) => ({
    id: c.callId,
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  });
  const text = last?.text ?? '';
  return {
    output_text: text,
    output_json: parseJsonOutput(text),
    output_tools: turns.flatMap((t) => t.toolCalls.map(asToolCall)),
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text, tool_calls: (last?.toolCalls ?? []).map(asToolCall) },
        finish_reason: last?.finishReason ?? 'stop',
      },
    ],
  };
}
