// The `openreward` SDK on the wire (test/fixtures/README.md): the client TRL's OpenRewardSpec, SkyRL and ROLL
// call, driven by test/fixtures/openreward/sdk-session.py as TRL drives it for a self-hosted server (no variant:
// bare paths such as `/splits` and `/call` with `X-Deployment` naming the environment). Before the door served
// those paths, its first catalogue request was a 401 (the bare path was no ORS route, so its X-API-Key was not
// read); a task without `env_name` and a text block without `detail` were KeyErrors in the SDK. Always:
// test/fixtures/openreward/sdk-requests.json replayed byte for byte (this run's key and session ids in place of
// the recorded ones): every reply what the client needs, the submit's reward the grade, the abandoned episode
// graded once with the empty answer, no session left, and the name TRL uses without env_name ("env") a 404
// naming the environments; the episodes carry the run their `<run>/<environment>` name gives. When
// RFT_TEST_OPENREWARD_SRC names a checkout of the SDK (RFT_TEST_OPENREWARD_PYTHON a Python with its
// dependencies): the real client through the recording proxy, its results the same and its bytes the fixture's
// (RFT_TEST_WIRE_RECORD=1 records it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { callEnds, checkEnds, expectCatalogueAndEpisodes, fillFor, keepOrCompare, lineOf, replayedEpisodes, runThroughProxy } from '../../helpers/ors-wire.js';
import { commitOf, pythonVersions, replay, type WireFixture } from '../../fixtures/record-proxy.js';

const FIXTURE = join(repoRoot, 'test/fixtures/openreward/sdk-requests.json');
const DRIVER = join(repoRoot, 'test/fixtures/openreward/sdk-session.py');
const src = process.env.RFT_TEST_OPENREWARD_SRC;
const python = process.env.RFT_TEST_OPENREWARD_PYTHON ?? 'python3';
const pyEnv = { ...process.env, PYTHONPATH: src ?? '' };
const reason = !src
  ? 'RFT_TEST_OPENREWARD_SRC (a checkout of the openreward SDK) is not set'
  : spawnSync(python, ['-c', 'import aiohttp, tenacity, openreward'], { env: pyEnv }).status !== 0
    ? `${python} cannot import aiohttp, tenacity and openreward from ${src}`
    : '';

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const ANSWER = `Answer: ${String(train[1]!.reference_answer)}`;
/** The model's think time before its submit (the sync client sends nothing meanwhile). */
const THINK_S = 2;
/** The calls' request lines: the bare path, the environment in X-Deployment. */
const CALL = /^POST \/call /;
/** The name the driver gives `environments.get`: `<run>/<environment>`, the SDK's `owner/name` (docs/ors.md). */
const RUN = 'openreward-sdk';
const NAME = `${RUN}/finqa`;

describe('the openreward SDK on the wire', () => {
  let server: TestServer;
  beforeAll(async () => {
    // several environments (finqa, coding, harbor): X-Deployment must pick one
    server = await startTestServer({ env: { RFT_SQLITE_SYNC: 'normal' } });
    expect(server.app.rft.environments.list().length).toBeGreaterThan(1);
  });
  afterAll(() => server?.close());

  it('its recorded requests, replayed byte for byte: every reply what it needs, the reward the grade, the abandoned episode graded once, no session left', async () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
    const replies = await replay(server.url, fixture.requests, { fill: fillFor(server, fixture.requests), maxPauseMs: 50 });
    const lines = fixture.requests.map((r) => lineOf(r.request!));
    // every request on a bare path but the catalogue's and the sessions' own
    expect(lines.filter((l) => /^\w+ \/(splits|tasks|task|task_range|num_tasks|tools|prompt|task_tools|call) /.test(l)).length).toBeGreaterThan(10);
    const statuses = replies.map((r, i) => `${lines[i]} ${r.status}`).filter((l) => !l.endsWith(' 200'));
    // the one refusal: GET /splits for "env", the name TRL sends without env_name, among several environments
    // (the SDK tries a catalogue request three times whatever its status: a ClientResponseError is a ClientError)
    expect(statuses).toEqual(Array(3).fill('GET /splits HTTP/1.1 404'));
    const refused = replies.find((r) => r.status === 404)!;
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'RFT_ERR_UNKNOWN_ENVIRONMENT', details: { name: 'env' } } });
    // the catalogue's replies carry what the SDK reads: env_name with every task, detail with every block
    const bodyOf = (path: string) => JSON.parse(replies[lines.findIndex((l) => l.startsWith(path))]!.body) as Record<string, unknown>;
    expect(bodyOf('POST /task ')).toMatchObject({ env_name: 'finqa', task: { split: 'train', index: 1 } });
    expect(bodyOf('POST /task_range ')).toMatchObject({ env_name: 'finqa' });
    expect(bodyOf('POST /tasks ')).toMatchObject({ env_name: 'finqa' });
    const prompt = JSON.parse(replies[lines.findIndex((l) => l.startsWith('GET /prompt '))]!.body) as unknown[];
    expect(prompt.length).toBeGreaterThan(0);
    for (const b of prompt) expect(b).toMatchObject({ type: 'text', detail: null });
    // the calls' streams: one `end` each, with the result the client parses
    expect(callEnds(fixture.requests, replies, CALL)).toMatchObject([
      { ok: true, output: { blocks: [{ type: 'text', detail: null }], reward: null, finished: false } },
      { ok: true, output: { reward: 1, finished: true, metadata: { grader: 'answer_match' } } },
      { ok: true, output: { reward: null, finished: false } },
      { ok: false, error: expect.stringContaining('no_such_tool') as unknown },
    ]);
    const { answered, abandoned, sids } = replayedEpisodes(fixture.requests, replies);
    await checkEnds(server, answered, abandoned, train[2]!, sids);
    await expectRun(answered, abandoned);
  });

  /** Both episodes are labelled with the run X-Deployment's owner part names. */
  async function expectRun(...traces: string[]): Promise<void> {
    for (const t of traces) {
      const r = (await (await fetch(`${server.url}/v1/rollouts/${t}`, { headers: { authorization: `Bearer ${server.key}` } })).json()) as { run: string | null };
      expect(r.run, t).toBe(RUN);
    }
  }

  describeWithCheckout(reason === '', 'the openreward SDK', reason)('the real client', () => {
    it("gets the catalogue, the reward, a model's mistake as ToolCallError, a 404 naming the environments; its abandoned episode graded; its bytes the fixture's", async () => {
      const { out, recorded, sids } = await runThroughProxy(server, python, DRIVER, [NAME, ANSWER, String(THINK_S)], { ...pyEnv, OPENREWARD_API_KEY: server.key });
      expectCatalogueAndEpisodes(out, train);
      expect(out).toMatchObject({ task_env: 'finqa', unnamed: expect.stringMatching(/404.*RFT_ERR_UNKNOWN_ENVIRONMENT.*finqa/) as unknown });
      await checkEnds(server, out.answered_sid as string, out.abandoned_sid as string, train[2]!, sids);
      await expectRun(out.answered_sid as string, out.abandoned_sid as string);
      keepOrCompare(FIXTURE, recorded, () => `openreward ${sdkVersion()} (${commitOf(src!, process.env.RFT_TEST_OPENREWARD_COMMIT)}), ${pythonVersions(python, ['aiohttp'], pyEnv)}: test/fixtures/openreward/sdk-session.py through test/doors/ors/openreward-wire.test.ts (RFT_TEST_WIRE_RECORD=1)`);
    }, 120_000);
  });
});

/** The SDK's version as it reports it (its User-Agent). */
function sdkVersion(): string {
  const r = spawnSync(python, ['-c', 'from openreward._version import USER_AGENT; print(USER_AGENT)'], { env: pyEnv, encoding: 'utf8' });
  return r.stdout.trim() || 'unknown';
}
