// The same episode through Agent RFT's own routes (/tools, then /grade or /graders/{name}): what a
// door's rewards are compared with.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TestServer } from './server.js';

export async function postJson(server: TestServer, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** The calls (name, arguments object) under one trace id, then the answer graded: its score. */
export async function agentRftScore(server: TestServer, item: Record<string, unknown>, calls: [string, Record<string, unknown>][], answer: string, gradePath = '/grade'): Promise<number> {
  const traceId = `trace_${randomUUID()}`;
  for (const [i, [name, args]] of calls.entries()) {
    const r = await postJson(server, '/tools', { type: 'function_call', call_id: `call_${i}`, name, arguments: JSON.stringify(args), trace_id: traceId, item });
    expect(r.status).toBe(200);
  }
  const g = await postJson(server, gradePath, { sample: { output_text: answer, output_tools: [], choices: [] }, item, trace_id: traceId });
  expect(g.status).toBe(200);
  return g.json.score as number;
}

/** One answer graded through POST /grade on a fresh rollout (no calls): its score. */
export async function gradeThroughApi(server: TestServer, item: Record<string, unknown>, text: string): Promise<number> {
  return agentRftScore(server, item, [], text);
}
