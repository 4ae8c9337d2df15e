// A rollout whose own commands end its sandbox (gVisor: a memory hog gets the sandbox's kernel
// killed) is the model's doing end to end, over real HTTP: the call that finds the sandbox gone is a
// 200 observation it reads and is charged for, and the grade is a 200 scoring 0 hidden cases, never
// a 5xx that would make the trainer discard the rollout instead of training on its zero.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { authedPost, repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { driversPresent, GVISOR_ENGINE } from '../sandbox/helpers.js';

const present = await driversPresent();
const row = JSON.parse(readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8').trim().split('\n')[0]!) as Record<string, unknown>;

describeIf(present.gvisor, 'gVisor (runsc engine)', 'no engine with the runsc runtime (.ci/setup-engines.sh)')('a rollout that ends its own gVisor sandbox', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_SANDBOX: 'docker', RFT_DOCKER_HOSTS: GVISOR_ENGINE, RFT_DOCKER_RUNTIME: 'runsc', RFT_SANDBOX_MEMORY_MB: '256' } });
  });
  afterAll(() => server?.close());

  const post = (path: string, body: unknown) => authedPost<{ output?: string; score?: number; error?: { code: string } }>(server, path, body);
  const shell = (traceId: string, callId: string, command: string) =>
    post('/tools', { type: 'function_call', call_id: callId, name: 'shell', arguments: JSON.stringify({ command }), trace_id: traceId, item: row });

  it('answers the next call with a readable 200 and grades the rollout 0, not a 5xx', async () => {
    const traceId = `trace_${randomUUID()}`;
    expect((await shell(traceId, 'c1', 'ls')).status).toBe(200);
    await shell(traceId, 'c2', `python3 -c 'x = bytearray(3 * 1024 ** 3); x[::4096] = b"y" * len(x[::4096])'`);
    const after = await shell(traceId, 'c3', 'echo after');
    expect(after.status).toBe(200);
    expect(after.json.output).toMatch(/commands took its sandbox down/);
    const g = await post('/graders/unit_tests', { sample: { output_text: 'Done.', output_tools: [], choices: [] }, item: row, trace_id: traceId });
    expect(g.status, JSON.stringify(g.json)).toBe(200);
    expect(g.json.score).toBe(0);
  }, 120_000);
});
