// The Agent RFT side of a door test: the same answer graded through POST /grade (a fresh rollout), and a
// rollout's record, so a door's reward can be compared with what Agent RFT gives.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TestServer } from './server.js';

export async function gradeThroughApi(server: TestServer, item: Record<string, unknown>, text: string): Promise<number> {
  const res = await fetch(`${server.url}/grade`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
    body: JSON.stringify({ sample: { output_text: text, output_tools: [], choices: [] }, item, trace_id: `trace_${randomUUID()}` }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { score: number }).score;
}
