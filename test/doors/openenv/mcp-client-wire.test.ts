// OpenEnv's MCPToolClient in production mode on the wire (test/fixtures/README.md): HTTP POST /{env}/mcp,
// JSON-RPC with the session_id in params. Always: test/fixtures/openenv/mcp-requests.json, what OpenEnv's
// own client (httpx) sent, replayed byte for byte (the session id it was given written {{SESSION}}, and
// the one this server mints put back: the same length, so its Content-Length holds): the session created,
// the row's tools, a call, the submit graded as /grade grades it, the close. When RFT_TEST_OPENENV_SRC
// names an OpenEnv checkout's src/ (and RFT_TEST_OPENENV_PYTHON a Python with httpx, pydantic, requests,
// websockets): the real client through the recording proxy, what it got and what it sent the fixture's
// (RFT_TEST_WIRE_RECORD=1 writes the fixture afresh).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { gradeThroughApi } from '../../helpers/agent-rft.js';
import { commitOf, pythonVersions, recordingProxy, replay, runDriver, toRecorded, type RecordedRequest, type WireFixture } from '../../fixtures/record-proxy.js';

const FIXTURE = join(repoRoot, 'test/fixtures/openenv/mcp-requests.json');
const DRIVER = join(repoRoot, 'test/fixtures/openenv/mcp-session.py');
const src = process.env.RFT_TEST_OPENENV_SRC;
const python = process.env.RFT_TEST_OPENENV_PYTHON ?? 'python3';
const reason = !src
  ? "RFT_TEST_OPENENV_SRC (an OpenEnv checkout's src/) is not set"
  : spawnSync(python, ['-c', 'import httpx, pydantic, requests, websockets'], {}).status !== 0
    ? `${python} cannot import httpx, pydantic, requests and websockets`
    : '';

// OpenEnv's client creates its session with no params: the row is chance, so the answer's reward is /grade's for the row the record holds.
const ANSWER = 'Answer: $48.6 million';
const QUERY = 'Halvorsen revenue';
/** A session id this server mints (timeOrderedId('oe_')): the time in 9 base-36 characters, 16 random bytes in base64url. */
const SESSION = /\boe_[0-9a-z]{9}[A-Za-z0-9_-]{22}\b/g;

interface Rec {
  door: string;
  item: Record<string, unknown>;
  calls: { tool: string; status: string }[];
  grades: { score: number }[];
}

describe("OpenEnv's MCPToolClient (production mode) on the wire", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
  });
  afterAll(() => server?.close());
  const record = async (sid: string): Promise<Rec> => (await (await fetch(`${server.url}/v1/rollouts/${sid}`, { headers: { authorization: `Bearer ${server.key}` } })).json()) as Rec;

  /** The session's record: one search_docs call, one grade, /grade's for the submitted answer. */
  async function expectRecorded(sid: string): Promise<void> {
    const rec = await record(sid);
    expect(rec.door).toBe('openenv');
    expect(rec.calls.map((c) => [c.tool, c.status])).toEqual([['search_docs', 'ok']]);
    expect(rec.grades.map((g) => g.score)).toEqual([await gradeThroughApi(server, rec.item, ANSWER)]);
  }

  it('its recorded requests, replayed byte for byte with the session id minted here: created, listed, called, graded once, closed', async () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
    const url = server.app.rft.privateDoors!.url;
    let sid = '';
    const bodies: { id: number; result?: Record<string, unknown>; error?: unknown }[] = [];
    for (const r of fixture.requests) {
      // (one connection per request: the session id of the first reply goes into the next requests' bytes)
      const [reply] = await replay(url, [{ ...r, connection: 0, pause_ms: 0, request: r.request!.replaceAll('{{SESSION}}', sid) }]);
      expect(reply!.status).toBe(200);
      const body = JSON.parse(reply!.body) as (typeof bodies)[number];
      bodies.push(body);
      if (sid === '') sid = String(body.result!.session_id);
    }
    expect(bodies.map((b) => b.id)).toEqual([1, 2, 3, 4, 5]);
    expect(bodies.every((b) => b.error === undefined)).toBe(true);
    const tools = (bodies[1]!.result!.tools as { name: string }[]).map((t) => t.name);
    expect(tools).toContain('search_docs');
    expect(tools.at(-1)).toBe('submit');
    expect(bodies[2]!.result).toMatchObject({ is_error: false });
    expect(bodies[3]!.result).toMatchObject({ is_error: false, data: 'Answer submitted: the episode is over.', structured_content: { done: true } });
    expect(bodies[4]!.result).toEqual({ session_id: sid, closed: true });
    await expectRecorded(sid);
  });

  describeWithCheckout(reason === '', "OpenEnv's MCPToolClient", reason)('the real client', () => {
    it("lists, calls and submits over /mcp; the record has its call and one grade; what it sends is the fixture's", async () => {
      const proxy = await recordingProxy(server.app.rft.privateDoors!.url);
      try {
        const env = { ...process.env, RFT_TEST_OPENENV_SRC: src };
        const run = await runDriver(python, [DRIVER, `${proxy.url}/finqa`, QUERY, ANSWER], env);
        expect(run.code, run.stderr).toBe(0);
        const out = run.out as { tools: string[]; search_docs: string; submit: string; session_id: string };
        expect(out).toMatchObject({ search_docs: 'str', submit: 'Answer submitted: the episode is over.' });
        expect(out.tools).toContain('search_docs');
        expect(out.tools.at(-1)).toBe('submit');
        await expectRecorded(out.session_id);
        const recorded: RecordedRequest[] = toRecorded(proxy).map((r) => ({ ...r, request: r.request!.replace(SESSION, '{{SESSION}}') }));
        if (process.env.RFT_TEST_WIRE_RECORD === '1') {
          const fixture: WireFixture = {
            source: `meta-pytorch/OpenEnv ${commitOf(src!, process.env.RFT_TEST_OPENENV_COMMIT)} src/openenv/core/mcp_client.py MCPToolClient (use_production_mode), ${pythonVersions(python, ['httpx'], env)}: test/fixtures/openenv/mcp-session.py through test/doors/openenv/mcp-client-wire.test.ts (RFT_TEST_WIRE_RECORD=1)`,
            requests: recorded,
          };
          writeFileSync(FIXTURE, `${JSON.stringify(fixture, null, 2)}\n`);
        }
        const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as WireFixture;
        expect(recorded.map((r) => r.request)).toEqual(fixture.requests.map((r) => r.request));
      } finally {
        await proxy.close();
      }
    }, 60_000);
  });
});
