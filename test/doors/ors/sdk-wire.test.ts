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
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { gradeThroughApi } from '../../helpers/agent-rft.js';
import { commitOf, pythonVersions, recordingProxy, replay, runDriver, toRecorded, type RecordedRequest, type Reply, type WireFixture } from '../../fixtures/record-proxy.js';

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
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;
const ANSWER = `Answer: ${String(train[1]!.reference_answer)}`;
/** The model's think time before its submit: longer than the async client's 10 s between pings. */
const THINK_S = 11;

const lineOf = (text: string) => text.slice(0, text.indexOf('\r\n'));
const isPing = (text: string) => lineOf(text).startsWith('POST /ping ');
const SID_HEADER = /^X-Session-ID: (\S+)\r$/im;

/** The recorded requests with the run's key and session ids as {{KEY}} and {{SID1}}, {{SID2}}... (in order of first use). */
function withPlaceholders(requests: RecordedRequest[], key: string): RecordedRequest[] {
  const sids: string[] = [];
  return requests.map((r) => {
    let text = r.request!.replaceAll(key, '{{KEY}}');
    const sid = SID_HEADER.exec(text)?.[1];
    if (sid && !sids.includes(sid)) sids.push(sid);
    sids.forEach((s, i) => (text = text.replaceAll(s, `{{SID${i + 1}}}`)));
    return { ...r, request: text };
  });
}

/** The session ids the replies to the requests' /create_session gave, in order. */
const sidsOf = (requests: RecordedRequest[], replies: readonly Reply[]) =>
  replies.flatMap((r, i) => (lineOf(requests[i]!.request!).startsWith('POST /create_session ') ? (/^event: task_id\ndata: (\S+)$/m.exec(r.body)?.[1] ?? []) : []));

/** What each placeholder session was for: the /create it got ({split, index} or a task spec), by its number. */
function sessionsOf(requests: RecordedRequest[]): Map<number, Record<string, unknown>> {
  const created = new Map<number, Record<string, unknown>>();
  for (const r of requests.filter((q) => lineOf(q.request!).startsWith('POST /create '))) {
    const n = Number(/\{\{SID(\d+)\}\}/.exec(r.request!)![1]);
    created.set(n, JSON.parse(r.request!.slice(r.request!.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>);
  }
  return created;
}

describe('the ORS python-sdk sync client on the wire', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_SQLITE_SYNC: 'normal' } });
  });
  afterAll(() => server?.close());

  const grades = async (sid: string) => {
    const res = await fetch(`${server.url}/v1/rollouts/${sid}`, { headers: { authorization: `Bearer ${server.key}` } });
    return ((await res.json()) as { grades: { score: number }[] }).grades.map((g) => g.score);
  };
  /** The answered session's and the abandoned one's grades, and every session gone from the store. */
  async function checkEnds(answered: string, abandoned: string, sids: string[]): Promise<void> {
    expect(await grades(answered)).toEqual([1]);
    expect(await grades(abandoned)).toEqual([await gradeThroughApi(server, itemOf(train[2]!), '')]);
    for (const sid of sids) expect(await server.app.rft.store.getSession('ors', sid), sid).toBeUndefined();
  }

  it('its recorded requests, replayed byte for byte: every reply what it needs, the reward the grade, the abandoned episode graded once, no session left', async () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
    const fill = (text: string, replies: readonly Reply[]) => {
      const sids = sidsOf(fixture.requests, replies);
      return text.replaceAll('{{KEY}}', server.key).replace(/\{\{SID(\d+)\}\}/g, (_, n: string) => sids[Number(n) - 1]!);
    };
    const replies = await replay(server.url, fixture.requests, { fill, maxPauseMs: 50 });
    const lines = fixture.requests.map((r) => lineOf(r.request!));
    expect(replies.map((r, i) => `${lines[i]} ${r.status}`).filter((l) => !l.endsWith(' 200'))).toEqual([]);
    // the calls' streams: one `end` each, with the result the client parses
    const ends = replies.filter((_, i) => / \/finqa\/call /.test(lines[i]!)).map((r) => JSON.parse(/^event: end\ndata: (.*)$/m.exec(r.body)![1]!) as Record<string, unknown>);
    expect(ends).toMatchObject([
      { ok: true, output: { reward: null, finished: false } },
      { ok: true, output: { reward: 1, finished: true, metadata: { grader: 'answer_match' } } },
      { ok: true, output: { reward: null, finished: false } },
      { ok: false, error: expect.stringContaining('no_such_tool') as unknown },
    ]);
    const sids = sidsOf(fixture.requests, replies);
    const created = sessionsOf(fixture.requests);
    const byTask = [...created].find(([, body]) => body.task_spec !== undefined)![0];
    const byIndex = [...created].find(([, body]) => body.index === 2)![0];
    await checkEnds(sids[byTask - 1]!, sids[byIndex - 1]!, sids);
  });

  describeWithCheckout(reason === '', 'the ORS python-sdk', reason)('the real client', () => {
    it("gets the catalogue, the reward, a model's mistake as ToolCallError; its abandoned episode graded; its bytes the fixture's", async () => {
      const proxy = await recordingProxy(server.url);
      try {
        const run = await runDriver(python, [DRIVER, proxy.url, 'finqa', ANSWER, String(THINK_S)], { ...pyEnv, ORS_API_KEY: server.key });
        expect(run.code, run.stderr).toBe(0);
        const out = run.out as Record<string, unknown>;
        expect(out.error, run.stderr).toBeUndefined();
        expect(out).toMatchObject({
          splits: ['train', 'validation'],
          num_tasks: train.length,
          listed: train.length,
          task_keys: ['id', 'index', 'split'],
          range: [train.length - 3, train.length - 2],
          first: { reward: null, finished: false },
          submit: { reward: 1, finished: true },
          abandoned_first: false,
          mistake: expect.stringContaining('ToolCallError') as unknown,
        });
        expect(out.session_tools).toEqual([...(train[1]!.tools as { function: { name: string } }[]).map((t) => t.function.name), 'submit']);
        const recorded = withPlaceholders(toRecorded(proxy), server.key);
        // Nothing at all during the think time, pings included (RFT_ORS_IDLE_MS must outlast a trainer's turn):
        // the next request is the submit, or the ping the loop's return wakes.
        const quiet = recorded.findIndex((r) => r.pause_ms >= THINK_S * 1000 - 500);
        expect(quiet, 'a gap of the think time').toBeGreaterThan(0);
        expect(recorded.slice(quiet, quiet + 2).map((r) => lineOf(r.request!)).sort()).toEqual(['POST /finqa/call HTTP/1.1', 'POST /ping HTTP/1.1']);
        const sids = [...new Set(proxy.requests.map((r) => SID_HEADER.exec(r.bytes.toString())?.[1]).filter((s) => s !== undefined))];
        await checkEnds(out.answered_sid as string, out.abandoned_sid as string, sids);
        if (process.env.RFT_TEST_WIRE_RECORD === '1') {
          const fixture: WireFixture = {
            source: `openrewardstandard/python-sdk ${commitOf(join(src!, '..'), process.env.RFT_TEST_ORS_SDK_COMMIT)} (ors-sdk 0.1.0, ors.client.ORS), ${pythonVersions(python, ['aiohttp'], pyEnv)}: test/fixtures/ors/sdk-sync.py through test/doors/ors/sdk-wire.test.ts (RFT_TEST_WIRE_RECORD=1)`,
            requests: recorded,
          };
          writeFileSync(FIXTURE, `${JSON.stringify(fixture, null, 2)}\n`);
        }
        // The bytes it sends are those the replay sends (pings: as many as its timing gave, the same bytes).
        const fixture = (JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture).requests.map((r) => r.request!);
        const texts = recorded.map((r) => r.request!);
        expect(texts.filter((t) => !isPing(t))).toEqual(fixture.filter((t) => !isPing(t)));
        expect(new Set(texts.filter(isPing))).toEqual(new Set(fixture.filter(isPing)));
      } finally {
        await proxy.close();
      }
    }, 120_000);
  });
});
