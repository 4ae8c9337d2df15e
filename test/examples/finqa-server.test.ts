// The finqa units served by the real server: tool calls and grading over HTTP on 127.0.0.1.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { TRAIN_FILE } from '../../examples/finqa/build-dataset.js';

const row = JSON.parse(readFileSync(TRAIN_FILE, 'utf8').split('\n')[1] as string) as Record<string, unknown>;

describe('finqa over HTTP', () => {
  let server: TestServer;
  let dir: string;

  beforeAll(async () => {
    // Only the finqa units (not the other examples' tools): one-line files re-exporting the repo's.
    dir = await mkdtemp(join(tmpdir(), 'finqa-units-'));
    const reexport = async (kind: string, name: string) => {
      await mkdir(join(dir, kind), { recursive: true });
      const target = pathToFileURL(join(repoRoot, kind, `${name}.ts`)).href;
      await writeFile(join(dir, kind, `${name}.ts`), `export { default } from '${target}';\n`);
    };
    for (const t of ['search_docs', 'list_docs', 'read_doc']) await reexport('tools', t);
    await reexport('graders', 'answer_match');
    server = await startTestServer({ toolsDir: join(dir, 'tools'), gradersDir: join(dir, 'graders') });
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const call = (traceId: string, callId: string, name: string, args: unknown) =>
    post('/tools', { type: 'function_call', id: `fc_${callId}`, call_id: callId, name, arguments: JSON.stringify(args), trace_id: traceId, item: row });

  it('serves the same tool schemas as the dataset rows carry', async () => {
    const res = await fetch(`${server.url}/v1/tools`, { headers: { authorization: `Bearer ${server.key}` } });
    const byName = (ts: unknown[]) =>
      [...(ts as Array<{ function: { name: string } }>)].sort((a, b) => a.function.name.localeCompare(b.function.name));
    const { tools } = (await res.json()) as { tools: unknown[] };
    expect(byName(tools)).toEqual(byName(row.tools as unknown[]));
  });

  it('answers search_docs with a JSON string output', async () => {
    const { status, json } = await call('trace_finqa_search', 'call_1', 'search_docs', { query: 'Kestrel Line contract worth', top_k: 2 });
    expect(status).toBe(200);
    const out = JSON.parse(json.output as string) as { results: Array<{ doc_id: string }> };
    expect(out.results[0]?.doc_id).toBe('halvorsen-earnings-call-q2-2025');
  });

  it('turns an unknown doc_id into a 200 output the model can read', async () => {
    const { status, json } = await call('trace_finqa_unknown', 'call_1', 'read_doc', { doc_id: 'halvorsen-q2' });
    expect(status).toBe(200);
    expect(json.output).toMatch(/no document "halvorsen-q2"; did you mean "halvorsen-q2-2025"/);
  });

  it('grades a rollout with the calls the ledger recorded', async () => {
    const trace = 'trace_finqa_grade';
    await call(trace, 'call_1', 'search_docs', { query: 'Halvorsen second quarter 2025 revenue' });
    await call(trace, 'call_2', 'read_doc', { doc_id: 'halvorsen-q2-2025' });
    const right = await post('/grade', { sample: { output_text: 'Answer: $51.7 million' }, item: row, trace_id: trace });
    expect(right.status).toBe(200);
    expect(right.json.score).toBe(1);
    const trap = await post('/grade', { sample: { output_text: 'Answer: $52.3 million' }, item: row, trace_id: trace });
    expect(trap.json.score).toBe(0);
  });
});
