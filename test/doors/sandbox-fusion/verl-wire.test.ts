// verl's SandboxFusion client on the wire (test/fixtures/README.md). Always: test/fixtures/verl/requests.json,
// the bytes verl's own check_correctness (call_sandbox_api: requests, a connection per case, cases in
// parallel) sent to /run_code, replayed byte for byte (one after the other: the order it sent them in is the
// thread pool's), on the process sandbox driver (the wire is the point here, not isolation: run-code.test.ts
// covers that on every driver); each reply is what verl reads: a 200 whose JSON status and run_result give
// the case's result. When RFT_TEST_VERL_SRC names a verl checkout (and RFT_TEST_VERL_PYTHON a Python with
// requests): the real client through the recording proxy, its results and its bytes the fixture's (as a set:
// the order is its threads'; RFT_TEST_WIRE_RECORD=1 writes the fixture afresh).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { commitOf, pythonVersions, recordingProxy, replay, runDriver, toRecorded, type WireFixture } from '../../fixtures/record-proxy.js';

const FIXTURE = join(repoRoot, 'test/fixtures/verl/requests.json');
const DRIVER = join(repoRoot, 'test/fixtures/verl/check-correctness.py');
const src = process.env.RFT_TEST_VERL_SRC;
const python = process.env.RFT_TEST_VERL_PYTHON ?? 'python3';
const reason = !src
  ? 'RFT_TEST_VERL_SRC (a volcengine/verl checkout) is not set'
  : spawnSync(python, ['-c', 'import requests'], {}).status !== 0
    ? `${python} cannot import requests`
    : '';

/** A stdin/stdout task: a right case, a wrong one, and an input the program dies on; verl's result for each. */
const JOB = {
  generation: 'a, b = map(int, input().split())\nprint(a + b)',
  in_outs: { inputs: ['1 2\n', '40 2\n', 'x y\n'], outputs: ['3', '41', '0'] },
};
const RESULTS = [true, false, -2];
/** What each case's reply must say, by its stdin (verl reads status, run_result.status, return_code, stdout). */
const REPLIES: Record<string, object> = {
  '1 2\n': { status: 'Success', run_result: { status: 'Finished', return_code: 0, stdout: '3\n' } },
  '40 2\n': { status: 'Success', run_result: { status: 'Finished', return_code: 0, stdout: '42\n' } },
  'x y\n': { status: 'Failed', run_result: { status: 'Finished', return_code: 1 } },
};

describe("verl's SandboxFusion client on the wire", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_SANDBOX: 'process', RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
  }, 120_000);
  afterAll(() => server?.close());

  it("its recorded requests, replayed byte for byte: each a 200 whose JSON gives verl the case's result", async () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
    expect(fixture.requests).toHaveLength(JOB.in_outs.inputs.length);
    const replies = await replay(server.app.rft.privateDoors!.url, fixture.requests);
    expect(replies.map((r) => [r.status, r.headers['content-type']])).toEqual(fixture.requests.map(() => [200, expect.stringMatching(/^application\/json/)]));
    const stdinOf = (text: string) => (JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { stdin: string }).stdin;
    expect(replies.map((r) => JSON.parse(r.body) as unknown)).toMatchObject(fixture.requests.map((q) => REPLIES[stdinOf(q.request!)]!));
  }, 60_000);

  describeWithCheckout(reason === '', "verl's check_correctness", reason)('the real client', () => {
    it("gets each case's result; its bytes are the fixture's", async () => {
      const proxy = await recordingProxy(server.app.rft.privateDoors!.url);
      try {
        const env = { ...process.env, RFT_TEST_VERL_SRC: src };
        const run = await runDriver(python, [DRIVER, `${proxy.url}/run_code`, JSON.stringify(JOB)], env);
        expect(run.code, run.stderr).toBe(0);
        expect(run.out).toMatchObject({ results: RESULTS });
        // its threads' order: the fixture keeps the requests sorted, each on a connection of its own
        const recorded = toRecorded(proxy)
          .sort((a, b) => a.request!.localeCompare(b.request!))
          .map((r, i) => ({ ...r, connection: i, pause_ms: 0 }));
        if (process.env.RFT_TEST_WIRE_RECORD === '1') {
          const fixture: WireFixture = {
            source: `volcengine/verl ${commitOf(src!, process.env.RFT_TEST_VERL_COMMIT)} verl/utils/reward_score/sandbox_fusion/utils.py check_correctness, ${pythonVersions(python, ['requests', 'urllib3'], env)}: test/fixtures/verl/check-correctness.py through test/doors/sandbox-fusion/verl-wire.test.ts (RFT_TEST_WIRE_RECORD=1; the cases run in parallel: their requests sorted, their pauses 0)`,
            requests: recorded,
          };
          writeFileSync(FIXTURE, `${JSON.stringify(fixture, null, 2)}\n`);
        }
        const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
        expect(recorded.map((r) => r.request)).toEqual(fixture.requests.map((r) => r.request));
      } finally {
        await proxy.close();
      }
    }, 120_000);
  });
});
