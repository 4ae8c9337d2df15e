// The ORS python-sdk's synchronous client on the wire (test/fixtures/README.md): the API TRL's OpenRewardSpec
// and SkyRL call through the `openreward` SDK (sync calls, a session per episode as a context), driven by
// test/fixtures/ors/sdk-sync.py: the catalogue, an episode opened by a listed task's spec and submitted after the
// model's think time (during which the sync client sends nothing, pings included), and an
// episode its model abandons (the context exits without a submit). Always: test/fixtures/ors/sdk-sync-requests.json,
// the bytes the client sent, replayed byte for byte on the connections it kept alive (this run's key and session
// ids in place of the recorded ones); every reply is what the client needs, the submit's reward is the grade, the
// abandoned episode is graded once with the empty answer, and no session is left. When RFT_TEST_ORS_SDK_SRC
// names the SDK's src/ (and RFT_TEST_ORS_PYTHON a Python with aiohttp and tenacity): the real client through
// the recording proxy, its results the same and its bytes the fixture's (RFT_TEST_WIRE_RECORD=1 records it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { callEnds, checkEnds as checkEndsOf, expectCatalogueAndEpisodes, fillFor, keepOrCompare, lineOf, replayedEpisodes, runThroughProxy } from '../../helpers/ors-wire.js';
import { commitOf, pythonVersions, replay, type WireFixture } from '../../fixtures/record-proxy.js';

const FIXTURE = join(repoRoot, 'test/fixtures/ors/sdk-sync-requests.json');
const DRIVER = join(repoRoot, 'test/fixtures/ors/sdk-sync.py');
const src = process.env.RFT_TEST_ORS_SDK_SRC;
const python = process.env.RFT_TEST_ORS_PYTHON ?? 'python3';
const pyEnv = { ...process.env, PYTHONPATH: src ?? '' };
const reason = !src
  ? "RFT_TEST_ORS_SDK_SRC (openrewardstandard/python-sdk's src/) is not set"
  : spawnSync(python, ['-c', 'import aiohttp, tenacity, ors.client'], { env: pyEnv }).status !== 0
    ? `${python} cannot import aiohttp, tenacity and ors.client from ${src}`
    : '';

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const ANSWER = `Answer: ${String(train[1]!.reference_answer)}`;
/** The model's think time before its submit: longer than the async client's 10 s between pings. */
const THINK_S = 11;

describe('the ORS python-sdk sync client on the wire', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_SQLITE_SYNC: 'normal' } });
  });
  afterAll(() => server?.close());

  /** The answered session's and the abandoned one's grades, and every session gone from the store. */
  const checkEnds = (answered: string, abandoned: string, sids: string[]) => checkEndsOf(server, answered, abandoned, train[2]!, sids);

  it('its recorded requests, replayed byte for byte: every reply what it needs, the reward the grade, the abandoned episode graded once, no session left', async () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
    const replies = await replay(server.url, fixture.requests, { fill: fillFor(server, fixture.requests), maxPauseMs: 50 });
    const lines = fixture.requests.map((r) => lineOf(r.request!));
    expect(replies.map((r, i) => `${lines[i]} ${r.status}`).filter((l) => !l.endsWith(' 200'))).toEqual([]);
    // the calls' streams: one `end` each, with the result the client parses
    expect(callEnds(fixture.requests, replies, / \/finqa\/call /)).toMatchObject([
      { ok: true, output: { reward: null, finished: false } },
      { ok: true, output: { reward: 1, finished: true, metadata: { grader: 'answer_match' } } },
      { ok: true, output: { reward: null, finished: false } },
      { ok: false, error: expect.stringContaining('no_such_tool') as unknown },
    ]);
    const { answered, abandoned, sids } = replayedEpisodes(fixture.requests, replies);
    await checkEnds(answered, abandoned, sids);
  });

  describeWithCheckout(reason === '', 'the ORS python-sdk', reason)('the real client', () => {
    it("gets the catalogue, the reward, a model's mistake as ToolCallError; its abandoned episode graded; its bytes the fixture's", async () => {
      const { out, recorded, sids } = await runThroughProxy(server, python, DRIVER, ['finqa', ANSWER, String(THINK_S)], { ...pyEnv, ORS_API_KEY: server.key });
      expectCatalogueAndEpisodes(out, train);
      // Nothing at all during the think time, pings included (RFT_ORS_IDLE_MS must outlast a trainer's turn):
      // the next request is the submit, or the ping the loop's return wakes.
      const quiet = recorded.findIndex((r) => r.pause_ms >= THINK_S * 1000 - 500);
      expect(quiet, 'a gap of the think time').toBeGreaterThan(0);
      expect(recorded.slice(quiet, quiet + 2).map((r) => lineOf(r.request!)).sort()).toEqual(['POST /finqa/call HTTP/1.1', 'POST /ping HTTP/1.1']);
      await checkEnds(out.answered_sid as string, out.abandoned_sid as string, sids);
      keepOrCompare(FIXTURE, recorded, () => `openrewardstandard/python-sdk ${commitOf(join(src!, '..'), process.env.RFT_TEST_ORS_SDK_COMMIT)} (ors-sdk 0.1.0, ors.client.ORS), ${pythonVersions(python, ['aiohttp'], pyEnv)}: test/fixtures/ors/sdk-sync.py through test/doors/ors/sdk-wire.test.ts (RFT_TEST_WIRE_RECORD=1)`);
    }, 120_000);
  });
});
