// The ORS door on the wire, as the reference client's own bytes reach it: test/fixtures/ors/sdk-requests.json
// (openrewardstandard/python-sdk and aiohttp, recorded by sdk.test.ts) replayed byte for byte, and the
// session's life as the client sees it: its pings keep it (aiohttp labels a POST without a body
// application/octet-stream, which the door once refused: the client's third failed ping killed the
// session, 3 s into the model's think time), its /delete and /delete_session end it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { OrsClient, rawExchange } from '../../helpers/ors-client.js';

const fixture = JSON.parse(readFileSync(join(repoRoot, 'test/fixtures/ors/sdk-requests.json'), 'utf8')) as { requests: string[] };
const IDLE_MS = 1_500;

describe('ORS door: the reference client on the wire', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_SQLITE_SYNC: 'normal', RFT_ORS_IDLE_MS: String(IDLE_MS) } });
  });
  afterAll(() => server?.close());

  /** A fixture request with this run's host, key and session ids (the nth session: the nth /create_session's). */
  const bytes = (text: string, sids: string[]) =>
    Buffer.from(text.replaceAll('{{HOST}}', new URL(server.url).host).replaceAll('{{KEY}}', server.key).replace(/\{\{SID(\d+)\}\}/g, (_, n: string) => sids[Number(n) - 1]!));

  it('the requests the client sent, replayed byte for byte: every one answered, the reward given, every session gone', async () => {
    const sids: string[] = [];
    const replies: { request: string; status: number; body: string }[] = [];
    for (const text of fixture.requests) {
      const r = await rawExchange(server.url, bytes(text, sids));
      const request = text.slice(0, text.indexOf(' HTTP/1.1'));
      replies.push({ request, status: r.status, body: r.body });
      if (request === 'POST /create_session') sids.push(/^event: task_id\ndata: (\S+)$/m.exec(r.body)![1]!);
    }
    expect(replies.filter((r) => r.status !== 200)).toEqual([]);
    expect(sids).toHaveLength(3);
    const ends = replies.filter((r) => r.request.endsWith('/call')).map((r) => JSON.parse(/^event: end\ndata: (.*)$/m.exec(r.body)![1]!) as { output: { reward: number | null; finished: boolean } });
    expect(ends.map((e) => e.output)).toMatchObject([{ reward: null, finished: false }, { reward: 1, finished: true }]);
    // The catalogue calls' sessions and the episode's were deleted: their pings are 404s now.
    const ping = fixture.requests.find((t) => t.startsWith('POST /ping '))!.replace(/\{\{SID\d+\}\}/, '{{SID1}}');
    for (const sid of sids) expect((await rawExchange(server.url, bytes(ping, [sid]))).status).toBe(404);
  });

  it('a session lives through think time many idle limits long while its client pings, and its calls go on', async () => {
    const ors = new OrsClient(server.url, { token: server.key, waitScale: 0.01, pingMs: IDLE_MS / 5 });
    await ors.session('finqa', { split: 'train', index: 0 }, async (s) => {
      await s.getPrompt();
      const pings = s.pings;
      await expect.poll(() => s.pings, { timeout: 30_000, interval: 50 }).toBeGreaterThanOrEqual(pings + 15);
      expect(s.dead).toBeUndefined();
      expect(await s.callTool('submit', { answer: 'Answer: $48.6 million' })).toMatchObject({ reward: 1, finished: true });
    });
    expect(ors.swallowed).toEqual([]);
  }, 60_000);

  it('catalogue calls leave no session: each one\'s /delete_session ends it', async () => {
    const ors = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
    expect(await ors.listSplits('finqa')).toEqual(['train', 'validation']);
    expect(await ors.numTasks('finqa', 'train')).toBeGreaterThan(0);
    expect((await ors.listTools('finqa')).tools.length).toBeGreaterThan(1);
    expect(ors.swallowed).toEqual([]);
    expect(ors.sids).toHaveLength(3);
    for (const sid of ors.sids) await expect(ors.request('POST', '/ping', undefined, sid, false)).rejects.toMatchObject({ status: 404 });
  });
});
