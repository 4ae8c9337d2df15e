// Which part of a sample is "the answer", and what the question was. Scoring only the answer part
// (a structured `answer` field, else the last "Answer:" line, else the whole reply) means the model
// may reason aloud before answering without the figures of its reasoning counting as guesses.
import type { Item, Sample } from 'rft-endpoints';

export interface AnswerText {
  text: string;
  source: 'output_json' | 'marker' | 'output_text' | 'none';
}

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : ''))
      .join(' ');
  }
  return '';
}

/** The reply text: `output_text`, or the last choice's message content when the trainer sent only choices. */
export function replyText(sample: Sample): string {
  if (typeof sample.output_text === 'string' && sample.output_text.trim()) return sample.output_text;
  const choices = sample.choices ?? [];
  for (let i = choices.length - 1; i >= 0; i--) {
    const msg = (choices[i] as { message?: { content?: unknown } } | undefined)?.message;
    const text = messageText(msg?.content);
    if (text.trim()) return text;
  }
  return '';
}

// "Answer: 42", "**Final answer:** 42", "answer = 42"; the last one wins, as a model that corrects
// itself puts its final word last.
const MARKER = /(?:^|[\s*_>#-])(?:final\s+)?answer\s*(?:\*\*|__)?\s*[:=：]\s*(?:\*\*|__)?\s*([^\n]*)/gi;

export function answerText(sample: Sample): AnswerText {
  const json = sample.output_json;
  if (json && typeof json === 'object' && !Array.isArray(json)) {
    const a = (json as Record<string, unknown>).answer;
    if (typeof a === 'string' || typeof a === 'number') return { text: String(a), source: 'output_json' };
  }
  const reply = replyText(sample);
  let last: string | undefined;
  for (const m of reply.matchAll(MARKER)) last = m[1];
  if (last !== undefined && last.trim()) return { text: last.replace(/\*\*|__/g, '').trim(), source: 'marker' };
  if (reply.trim()) return { text: reply.replace(/\*\*|__/g, '').trim(), source: 'output_text' };
  return { text: '', source: 'none' };
}

/** The question: the last user message of the row's `messages` (empty when there is none). */
export function questionText(item: Item): string {
  const messages = Array.isArray(item.messages) ? item.messages : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown } | undefined;
    if (m?.role === 'user') return messageText(m.content);
  }
  return '';
}
