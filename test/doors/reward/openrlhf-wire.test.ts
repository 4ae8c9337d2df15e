// OpenRLHF's remote reward call on the wire (test/fixtures/README.md). Always: test/fixtures/openrlhf/requests.json,
// the bytes its SingleTurnAgentExecutor (aiohttp, a session and so a connection per call) sent, replayed
// byte for byte; each reply is what execute() reads: a 2xx (raise_for_status) whose JSON has `rewards` and
// `scores` (one per query) and `extra_logs`. When RFT_TEST_OPENRLHF_SRC names an OpenRLHF checkout (and
// RFT_TEST_OPENRLHF_PYTHON a Python with aiohttp): the real executor through the recording proxy, what it
// keeps of each reply and its bytes the fixture's (RFT_TEST_WIRE_RECORD=1 writes the fixture afresh).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { commitOf, pythonVersions, recordingProxy, replay, runDriver, toRecorded, type WireFixture } from '../../fixtures/record-proxy.js';

const FIXTURE = join(repoRoot, 'test/fixtures/openrlhf/requests.json');
const DRIVER = join(repoRoot, 'test/fixtures/openrlhf/remote-reward.py');
const src = process.env.RFT_TEST_OPENRLHF_SRC;
const python = process.env.RFT_TEST_OPENRLHF_PYTHON ?? 'python3';
const reason = !src
  ? 'RFT_TEST_OPENRLHF_SRC (an OpenRLHF/OpenRLHF checkout) is not set'
  : spawnSync(python, ['-c', 'import aiohttp'], {}).status !== 0
    ? `${python} cannot import aiohttp`
    : '';

const row = JSON.parse(readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').split('\n')[0]!) as Record<string, unknown>;
const { messages, tools: _t, ...fields } = row;
/** The executor's prompt: chat-templated text (the driver's engine appends the response and <|im_end|>). */
const prompt = `<|im_start|>user\n${(messages as { content: string }[]).at(-1)!.content}<|im_end|>\n<|im_start|>assistant\n`;
const right = `The figure is in the report.\nAnswer: ${String(row.reference_answer)}`;
/** The samples the driver rolls out, and the reward execute() must keep for each. */
const SAMPLES: { sample: { prompt: string; response: string; label: unknown }; reward: number }[] = [
  { sample: { prompt, response: right, label: JSON.stringify(fields) }, reward: 1 },
  { sample: { prompt, response: 'Answer: 1', label: JSON.stringify(fields) }, reward: 0 },
  { sample: { prompt, response: right, label: row.reference_answer }, reward: 1 },
];

describe("OpenRLHF's remote reward call on the wire", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
  });
  afterAll(() => server?.close());

  it('its recorded requests, replayed byte for byte: each a 2xx whose JSON has its rewards, scores and extra_logs', async () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
    expect(fixture.requests).toHaveLength(SAMPLES.length);
    const replies = await replay(server.app.rft.privateDoors!.url, fixture.requests);
    expect(replies.map((r) => r.status)).toEqual(SAMPLES.map(() => 200));
    expect(replies.map((r) => r.headers['content-type'])).toEqual(SAMPLES.map(() => expect.stringMatching(/^application\/json/)));
    expect(replies.map((r) => JSON.parse(r.body) as unknown)).toEqual(SAMPLES.map((s) => ({ rewards: [s.reward], scores: [s.reward], extra_logs: expect.any(Object) })));
  });

  describeWithCheckout(reason === '', "OpenRLHF's SingleTurnAgentExecutor", reason)('the real client', () => {
    it("keeps each reward; its bytes are the fixture's", async () => {
      const proxy = await recordingProxy(server.app.rft.privateDoors!.url);
      try {
        const env = { ...process.env, RFT_TEST_OPENRLHF_SRC: src };
        const run = await runDriver(python, [DRIVER, `${proxy.url}/reward/answer_match`, JSON.stringify(SAMPLES.map((s) => s.sample))], env);
        expect(run.code, run.stderr).toBe(0);
        expect(run.out).toEqual(SAMPLES.map((s) => ({ reward: [s.reward], scores: [s.reward], extra_logs: expect.any(Object) })));
        const recorded = toRecorded(proxy);
        if (process.env.RFT_TEST_WIRE_RECORD === '1') {
          const fixture: WireFixture = {
            source: `OpenRLHF/OpenRLHF ${commitOf(src!, process.env.RFT_TEST_OPENRLHF_COMMIT)} openrlhf/utils/agent.py SingleTurnAgentExecutor, ${pythonVersions(python, ['aiohttp'], env)}: test/fixtures/openrlhf/remote-reward.py through test/doors/reward/openrlhf-wire.test.ts (RFT_TEST_WIRE_RECORD=1)`,
            requests: recorded,
          };
          writeFileSync(FIXTURE, `${JSON.stringify(fixture, null, 2)}\n`);
        }
        const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
        expect(recorded.map(({ connection, request }) => ({ connection, request }))).toEqual(fixture.requests.map(({ connection, request }) => ({ connection, request })));
      } finally {
        await proxy.close();
      }
    }, 60_000);
  });
});
