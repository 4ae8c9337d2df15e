// slime's remote_rm on the wire (test/fixtures/README.md). Always: test/fixtures/slime/requests.json, the
// bytes slime's own remote_rm (aiohttp) sent, replayed byte for byte on the connection it kept alive; each
// reply is what remote_rm needs: a 2xx (it calls raise_for_status) whose JSON is the reward. When
// RFT_TEST_SLIME_SRC names a slime checkout (and RFT_TEST_SLIME_PYTHON a Python with aiohttp): the real
// remote_rm through the recording proxy, its rewards and its bytes the fixture's (RFT_TEST_WIRE_RECORD=1
// writes the fixture afresh from this run).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { commitOf, pythonVersions, recordingProxy, replay, runDriver, toRecorded, type WireFixture } from '../../fixtures/record-proxy.js';

const FIXTURE = join(repoRoot, 'test/fixtures/slime/requests.json');
const DRIVER = join(repoRoot, 'test/fixtures/slime/remote-rm.py');
const src = process.env.RFT_TEST_SLIME_SRC;
const python = process.env.RFT_TEST_SLIME_PYTHON ?? 'python3';
const reason = !src
  ? 'RFT_TEST_SLIME_SRC (a THUDM/slime checkout) is not set'
  : spawnSync(python, ['-c', 'import aiohttp'], {}).status !== 0
    ? `${python} cannot import aiohttp`
    : '';

const row = JSON.parse(readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').split('\n')[0]!) as Record<string, unknown>;
const { messages, tools: _t, ...fields } = row;
const right = `The figure is in the report.\nAnswer: ${String(row.reference_answer)}`;
/** The samples the driver grades, and the reward remote_rm must return for each. */
const SAMPLES: { sample: { prompt: unknown; response: string; label: unknown }; reward: number }[] = [
  { sample: { prompt: messages, response: right, label: row.reference_answer }, reward: 1 },
  { sample: { prompt: messages, response: 'Answer: 1', label: row.reference_answer }, reward: 0 },
  // slime keeps a JSON label as its text: the grader's item
  { sample: { prompt: (messages as { content: string }[]).at(-1)!.content, response: right, label: JSON.stringify(fields) }, reward: 1 },
  { sample: { prompt: 'Answer in one line.', response: 'Answer: 7 employees', label: { ...fields, reference_answer: '7 employees' } }, reward: 1 },
];

describe("slime's remote_rm on the wire", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
  });
  afterAll(() => server?.close());

  it('its recorded requests, replayed byte for byte: each a 2xx whose JSON is the reward', async () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
    expect(fixture.requests).toHaveLength(SAMPLES.length);
    const replies = await replay(`${server.app.rft.privateDoors!.url}`, fixture.requests);
    expect(replies.map((r) => r.status)).toEqual(SAMPLES.map(() => 200));
    expect(replies.map((r) => r.headers['content-type'])).toEqual(SAMPLES.map(() => expect.stringMatching(/^application\/json/)));
    expect(replies.map((r) => JSON.parse(r.body) as unknown)).toEqual(SAMPLES.map((s) => s.reward));
  });

  describeWithCheckout(reason === '', "slime's remote_rm", reason)('the real client', () => {
    it('gets each reward; its bytes are the fixture\'s', async () => {
      const proxy = await recordingProxy(server.app.rft.privateDoors!.url);
      try {
        const env = { ...process.env, RFT_TEST_SLIME_SRC: src };
        const run = await runDriver(python, [DRIVER, `${proxy.url}/reward/answer_match`, JSON.stringify(SAMPLES.map((s) => s.sample))], env);
        expect(run.code, run.stderr).toBe(0);
        expect(run.out).toEqual(SAMPLES.map((s) => ({ reward: s.reward })));
        const recorded = toRecorded(proxy);
        if (process.env.RFT_TEST_WIRE_RECORD === '1') {
          const fixture: WireFixture = {
            source: `THUDM/slime ${commitOf(src!, process.env.RFT_TEST_SLIME_COMMIT)} slime/rollout/rm_hub/__init__.py remote_rm, ${pythonVersions(python, ['aiohttp'], env)}: test/fixtures/slime/remote-rm.py through test/doors/reward/slime-wire.test.ts (RFT_TEST_WIRE_RECORD=1)`,
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
