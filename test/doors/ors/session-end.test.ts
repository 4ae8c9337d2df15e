// ORS sessions that end without an answer, by the core's rule every door uses (DoorCore.gradesUnanswered,
// docs/door-failures.md): the client's end (/delete, /delete_session, as the reference client's __aexit__ sends
// them) or RFT_ORS_IDLE_MS unused grades the episode once with the empty answer, as the grader scores it, and
// the record keeps that grade (TRL's OpenRewardSpec trains on it as 0.0, SkyRL as 0: abandoning an episode
// must not escape the 0 the others get); a spent budget is graded so too. A session open when the server
// shuts down is never graded: not at the shutdown, nor when the next process on the same record meets it
// (the client's end after the restart, or the sweep), since our downtime lies between.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { OrsClient } from '../../helpers/ors-client.js';
import { gradeThroughApi } from '../../helpers/agent-rft.js';
import { waitFor } from '../../helpers/wait.js';

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;
const IDLE_MS = 1_000;

interface RolloutRecord {
  calls: { tool: string; status: string }[];
  grades: { score: number; sample?: unknown }[];
}
const recordOf = async (server: TestServer, traceId: string): Promise<RolloutRecord> => {
  const res = await fetch(`${server.url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${server.key}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as RolloutRecord;
};
/** The session is gone from the store (the sweep removed it, or its delete). */
const goneFromStore = (server: TestServer, sid: string) =>
  waitFor(`session ${sid} to leave the store`, async () => ((await server.app.rft.store.getSession('ors', sid)) === undefined ? true : undefined));

describe('ORS door: a session that ends without an answer', () => {
  let server: TestServer;
  let idle: TestServer;
  beforeAll(async () => {
    [server, idle] = await Promise.all([
      startTestServer({ env: { RFT_SQLITE_SYNC: 'normal' } }),
      startTestServer({ env: { RFT_SQLITE_SYNC: 'normal', RFT_ORS_IDLE_MS: String(IDLE_MS) } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), idle?.close()]);
  });
  const emptyGrade = (index: number) => gradeThroughApi(server, itemOf(train[index]!), '');

  it('ended by its client (/delete, then /delete_session) after a tool call: graded once with the empty answer; a retried end grades nothing more', async () => {
    const ors = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
    const sid = await ors.session('finqa', { split: 'train', index: 2 }, async (s) => {
      await s.getPrompt();
      expect((await s.callTool('list_docs', {})).reward).toBeNull();
      return s.sid;
    });
    expect(ors.swallowed).toEqual([]);
    const rec = await recordOf(server, sid);
    expect(rec.calls.map((c) => c.tool)).toEqual(['list_docs']);
    expect(rec.grades.map((g) => g.score)).toEqual([await emptyGrade(2)]);
    // the client's retries of its end (a reply it lost): answered, nothing graded again
    await ors.request('POST', '/delete', undefined, sid, false);
    await ors.request('POST', '/delete_session', undefined, sid, false);
    expect((await recordOf(server, sid)).grades).toHaveLength(1);
  });

  it("a session that reached no model (its tools listed, or nothing: SkyRL's episode whose model answered without a tool call) is graded like any its client ends", async () => {
    // TRL's OpenRewardSpec probes a task so before training (/create, /task_tools, /delete), and SkyRL's episode
    // that ends on a text answer is /create then /delete (its prompt is in its dataset): SkyRL trains that one as
    // 0, and nothing on the wire tells the two apart, so both are graded (docs/ors.md)
    const ors = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
    const probe = await ors.session('finqa', { split: 'train', index: 6 }, async (s) => {
      expect((await s.listTools()).map((t) => t.name)).toContain('submit');
      return s.sid;
    });
    // SkyRL's silent episode, as the openreward SDK sends it: its environment in X-Deployment
    const h = { 'x-api-key': server.key, 'x-deployment': 'finqa' };
    const created = await (await fetch(`${server.url}/create_session`, { method: 'POST', headers: { ...h, accept: 'text/event-stream' } })).text();
    const silent = /event: task_id\r?\ndata: (\S+)/.exec(created)![1]!;
    for (const [path, body] of [['/create', { split: 'train', index: 7 }], ['/delete', undefined]] as const) {
      const json = body ? { headers: { ...h, 'x-session-id': silent, 'content-type': 'application/json' }, body: JSON.stringify(body) } : { headers: { ...h, 'x-session-id': silent } };
      const res = await fetch(`${server.url}${path}`, { method: 'POST', ...json });
      expect(res.status, await res.text()).toBe(200);
    }
    expect(ors.swallowed).toEqual([]);
    expect((await recordOf(server, probe)).grades.map((g) => g.score)).toEqual([await emptyGrade(6)]);
    expect((await recordOf(server, silent)).grades.map((g) => g.score)).toEqual([await emptyGrade(7)]);
  });

  it('a retried /delete whose session is still there (its first reply lost) gets the recorded grade, not a second one', async () => {
    const ors = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
    const sid = await new Promise<string>((resolve, reject) => {
      ors
        .session('finqa', { split: 'train', index: 3 }, async (s) => {
          await s.callTool('list_docs', {});
          // two ends at once, as a client retrying on a lost reply may send them
          await Promise.all([0, 1].map(() => ors.request('POST', '/delete', undefined, s.sid, false)));
          return s.sid;
        })
        .then(resolve, reject);
    });
    expect((await recordOf(server, sid)).grades.map((g) => g.score)).toEqual([await emptyGrade(3)]);
  });

  it('a submitted episode is not graded again at its end; a spent budget is graded with the empty answer, once', async () => {
    const ors = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
    const answer = `Answer: ${String(train[0]!.reference_answer)}`;
    const submitted = await ors.session('finqa', { split: 'train', index: 0 }, async (s) => {
      expect(await s.callTool('submit', { answer })).toMatchObject({ reward: 1, finished: true });
      return s.sid;
    });
    expect((await recordOf(server, submitted)).grades.map((g) => g.score)).toEqual([1]);

    const budget = train[4]!.tool_budget as number;
    const spent = await ors.session('finqa', { split: 'train', index: 4 }, async (s) => {
      for (let i = 0; i < budget; i++) await s.callTool('list_docs', {});
      const out = await s.callTool('list_docs', {});
      expect(out.finished).toBe(true);
      expect(out.blocks[0]!.text).toMatch(/^Tool budget exhausted/);
      // the reward the record keeps, in the reply (TRL keeps the last non-null one)
      expect(out.reward).toBe(await emptyGrade(4));
      return s.sid;
    });
    expect((await recordOf(server, spent)).grades.map((g) => g.score)).toEqual([await emptyGrade(4)]);
  });

  it('unused for RFT_ORS_IDLE_MS (no ping): graded once with the empty answer when the sweep removes it', async () => {
    const ors = new OrsClient(idle.url, { token: idle.key, waitScale: 0.01 });
    let sid = '';
    await ors.session('finqa', { split: 'train', index: 5 }, async (s) => {
      s.stopPings();
      sid = s.sid;
      await s.callTool('list_docs', {});
      await goneFromStore(idle, sid);
    });
    const rec = await waitFor('the idle grade', async () => {
      const r = await recordOf(idle, sid);
      return r.grades.length > 0 ? r : undefined;
    });
    expect(rec.grades.map((g) => g.score)).toEqual([await gradeThroughApi(idle, itemOf(train[5]!), '')]);
    // its client's end after the sweep (the client's __aexit__) finds nothing to grade
    expect((await recordOf(idle, sid)).grades).toHaveLength(1);
  });

  it('ended by its client past RFT_ORS_IDLE_MS, before any sweep removed it: graded as idle, once', async () => {
    const late = await startTestServer({ env: { RFT_SQLITE_SYNC: 'normal', RFT_ORS_IDLE_MS: String(IDLE_MS) } });
    try {
      // no sweep removes anything on this server: the client's end is the first to meet the idle session
      late.app.rft.store.expireSessions = () => Promise.resolve([]);
      const ors = new OrsClient(late.url, { token: late.key, waitScale: 0.01 });
      const sid = await ors.session('finqa', { split: 'train', index: 9 }, async (s) => {
        s.stopPings();
        await s.callTool('list_docs', {});
        // past the limit, read without a request (a ping would keep it)
        await waitFor('the session to be past its idle limit', async () => {
          const r = await late.app.rft.store.getSession('ors', s.sid);
          return r && Date.now() - r.lastUsed > IDLE_MS + 100 ? true : undefined;
        });
        return s.sid;
      });
      expect(ors.swallowed).toEqual([]);
      expect((await recordOf(late, sid)).grades.map((g) => g.score)).toEqual([await gradeThroughApi(late, itemOf(train[9]!), '')]);
      expect(await late.app.rft.store.getSession('ors', sid)).toBeUndefined();
    } finally {
      await late.close();
    }
  });

  it('open when the server shuts down: not graded, nor after a restart on the same record (its client\'s end, or the sweep)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-ors-shutdown-'));
    try {
      const closing = await startTestServer({ dataDir, env: { RFT_SQLITE_SYNC: 'normal' } });
      const before = new OrsClient(closing.url, { token: closing.key, waitScale: 0.01 });
      const sids: string[] = [];
      // two sessions left open (their client's context not exited) when the server closes
      const open = [6, 7].map(
        (index) =>
          new Promise<void>((opened) => {
            void before.session('finqa', { split: 'train', index }, async (s) => {
              s.stopPings();
              await s.callTool('list_docs', {});
              sids.push(s.sid);
              opened();
              await new Promise(() => undefined);
            });
          }),
      );
      await Promise.all(open);
      await closing.close();
      expect(sids).toHaveLength(2);

      // (an idle limit the restart takes far less than: the first one's end finds its session there)
      const again = await startTestServer({ dataDir, env: { RFT_SQLITE_SYNC: 'normal', RFT_ORS_IDLE_MS: String(5 * IDLE_MS) } });
      try {
        const after = new OrsClient(again.url, { token: again.key, waitScale: 0.01 });
        // the first one's client ends it after the restart (its pings failed while we were down)
        await after.request('POST', '/delete', undefined, sids[0], false);
        await after.request('POST', '/delete_session', undefined, sids[0], false);
        // a session of the new process, left idle, is graded: the sweep runs and grades here
        let fresh = '';
        await after.session('finqa', { split: 'train', index: 8 }, async (s) => {
          s.stopPings();
          fresh = s.sid;
          await s.callTool('list_docs', {});
          await goneFromStore(again, fresh);
        });
        await goneFromStore(again, sids[1]!);
        await waitFor('the new session\'s idle grade', async () => ((await recordOf(again, fresh)).grades.length > 0 ? true : undefined));
        for (const sid of sids) {
          const rec = await recordOf(again, sid);
          expect(rec.calls.map((c) => c.tool)).toEqual(['list_docs']);
          expect(rec.grades, sid).toEqual([]);
        }
      } finally {
        await again.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
