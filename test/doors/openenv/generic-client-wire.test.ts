// OpenEnv's GenericEnvClient on the wire (test/fixtures/README.md). Always: test/fixtures/openenv/requests.json,
// what OpenEnv's own client (websockets) sent: the upgrade request and its frames (masked as sent), replayed
// byte for byte with their pauses; each reply is what the client reads: the 101, then per message a text
// frame {type: "observation" | "state", data} with the reset's messages, the submit's reward and done, the
// state; then the close handshake. When RFT_TEST_OPENENV_SRC names an OpenEnv checkout's src/ (and
// RFT_TEST_OPENENV_PYTHON a Python with websockets): the real client through the recording proxy, what it
// got and what it sent the fixture's (the handshake but its random key, each frame's opcode and payload:
// the masks are random; RFT_TEST_WIRE_RECORD=1 writes the fixture afresh).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { commitOf, pythonVersions, recordingProxy, replay, runDriver, toRecorded, type RecordedRequest, type WireFixture } from '../../fixtures/record-proxy.js';

const FIXTURE = join(repoRoot, 'test/fixtures/openenv/requests.json');
const DRIVER = join(repoRoot, 'test/fixtures/openenv/generic-episode.py');
const src = process.env.RFT_TEST_OPENENV_SRC;
const python = process.env.RFT_TEST_OPENENV_PYTHON ?? 'python3';
const reason = !src
  ? "RFT_TEST_OPENENV_SRC (an OpenEnv checkout's src/) is not set"
  : spawnSync(python, ['-c', 'import websockets'], {}).status !== 0
    ? `${python} cannot import websockets`
    : '';

const row = JSON.parse(readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').split('\n')[0]!) as { reference_answer: string; messages: unknown[] };
const ANSWER = `Answer: ${row.reference_answer}`;
/** Longer than websockets' ping interval (20 s). */
const THINK_S = 25;

/** What the client sent, with what varies from run to run left out: the handshake's key, the frames' masks. */
const sent = (requests: RecordedRequest[]) =>
  requests.map((r) => (r.request !== undefined ? { request: r.request.replace(/^Sec-WebSocket-Key: \S+\r$/im, 'Sec-WebSocket-Key: *') } : { opcode: r.opcode, payload: r.payload }));

describe("OpenEnv's GenericEnvClient on the wire", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
  });
  afterAll(() => server?.close());

  it('its recorded handshake and frames, replayed byte for byte: the 101, the observations, the reward, the state, the close', async () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
    const replies = await replay(server.app.rft.privateDoors!.url, fixture.requests);
    expect(replies[0]).toMatchObject({ status: 101, headers: { upgrade: 'websocket' } });
    const messages = replies.slice(1, -1).map((r) => [r.status, JSON.parse(r.body) as unknown]);
    expect(messages).toMatchObject([
      [1, { type: 'observation', data: { done: false, observation: { messages: row.messages } } }],
      [1, { type: 'observation', data: { done: true, reward: 1 } }],
      [1, { type: 'state', data: { step_count: 1, split: 'train', index: 0, done: true } }],
    ]);
    expect(replies.at(-1)!.status).toBe(8);
  });

  describeWithCheckout(reason === '', "OpenEnv's GenericEnvClient", reason)('the real client', () => {
    it("gets the observation, the reward and the state; what it sends is the fixture's", async () => {
      const proxy = await recordingProxy(server.app.rft.privateDoors!.url);
      try {
        const env = { ...process.env, RFT_TEST_OPENENV_SRC: src };
        const run = await runDriver(python, [DRIVER, `${proxy.url}/finqa`, '0', ANSWER], env);
        expect(run.code, run.stderr).toBe(0);
        expect(run.out).toEqual({
          reset: { done: false, reward: null, messages: row.messages.length },
          submit: { done: true, reward: 1 },
          state: { step_count: 1, split: 'train', index: 0, done: true },
        });
        const recorded = toRecorded(proxy);
        if (process.env.RFT_TEST_WIRE_RECORD === '1') {
          const fixture: WireFixture = {
            source: `meta-pytorch/OpenEnv ${commitOf(src!, process.env.RFT_TEST_OPENENV_COMMIT)} src/openenv/core/generic_client.py GenericEnvClient, ${pythonVersions(python, ['websockets'], env)}: test/fixtures/openenv/generic-episode.py through test/doors/openenv/generic-client-wire.test.ts (RFT_TEST_WIRE_RECORD=1)`,
            requests: recorded,
          };
          writeFileSync(FIXTURE, `${JSON.stringify(fixture, null, 2)}\n`);
        }
        const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
        expect(sent(recorded)).toEqual(sent(fixture.requests));
      } finally {
        await proxy.close();
      }
    }, 60_000);

    it('lives through think time past its ping interval: its pings are answered and the submit still gets the reward', async () => {
      const proxy = await recordingProxy(server.app.rft.privateDoors!.url);
      try {
        const run = await runDriver(python, [DRIVER, `${proxy.url}/finqa`, '0', ANSWER, String(THINK_S)], { ...process.env, RFT_TEST_OPENENV_SRC: src });
        expect(run.code, run.stderr).toBe(0);
        expect(run.out).toMatchObject({ submit: { done: true, reward: 1 }, state: { step_count: 1, done: true } });
        // websockets pings every 20 s and drops the connection when a pong is 20 s late
        expect(toRecorded(proxy).filter((r) => r.opcode === 9).length).toBeGreaterThanOrEqual(1);
      } finally {
        await proxy.close();
      }
    }, 120_000);
  });
});
