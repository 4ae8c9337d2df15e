// Failures of ours through the ORS door: never an `ok: false` the model reads, but a stream cut
// without a result (the client reconnects with the task_id and the call runs again, uncharged) and,
// when the failure lasts, 503s the client retries and then gives up on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { MaxRetriesError, OrsClient } from '../../helpers/ors-client.js';

const units = join(repoRoot, 'test/fixtures/units');

describe('ORS door: failures of ours', () => {
  let server: TestServer;
  let ors: OrsClient;
  const dir = mkdtempSync(join(tmpdir(), 'rft-ors-fail-'));
  const gate = join(dir, 'gate');
  beforeAll(async () => {
    // An environment of the fixture units: one task, the exact and broken graders.
    for (const grader of ['exact', 'broken']) {
      const env = join(dir, 'envs', `gated_${grader}`);
      mkdirSync(env, { recursive: true });
      writeFileSync(join(env, 'job.json'), JSON.stringify({ method: { reinforcement: { tools: [{ name: 'gated_failure' }], grader: { name: grader } } } }));
      writeFileSync(join(env, 'train.jsonl'), `${JSON.stringify({ messages: [{ role: 'user', content: 'q' }], reference_answer: '42' })}\n`);
    }
    server = await startTestServer({
      toolsDir: join(units, 'infra-tools'),
      gradersDir: join(units, 'graders'),
      env: { RFT_ENVIRONMENTS: join(dir, 'envs'), RFT_SQLITE_SYNC: 'normal' },
    });
    ors = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a tool failing on our side cuts the stream; its reconnects run it again, then get 503: never ok:false, nothing charged', async () => {
    writeFileSync(gate, '');
    const statuses: string[] = [];
    const watching = new OrsClient(server.url, { token: server.key, waitScale: 0.01, onStream: ({ events }) => statuses.push(events.map((e) => e[0]).join(',')) });
    const sid = await watching.session('gated_exact', { split: 'train', index: 0 }, async (s) => {
      const err = await s.callTool('gated_failure', { gate }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MaxRetriesError);
      expect(String(err)).toContain('RFT_ERR_ORS_CALL_FAILED');
      // the episode goes on: the submit is graded
      expect(await s.callTool('submit', { answer: '42' })).toMatchObject({ reward: 1, finished: true });
      return s.sid;
    });
    // one stream per run (its task_id, then cut), all under one task_id
    expect(statuses.length).toBeGreaterThanOrEqual(3);
    const rec = await fetch(`${server.url}/v1/rollouts/${sid}`, { headers: { authorization: `Bearer ${server.key}` } });
    expect(((await rec.json()) as { calls: unknown[] }).calls).toHaveLength(0);
  }, 60_000);

  it('a session a failure of ours broke for good stays ungraded when its client ends it unanswered; one it did not is graded', async () => {
    writeFileSync(gate, '');
    const record = async (sid: string) => {
      const res = await fetch(`${server.url}/v1/rollouts/${sid}`, { headers: { authorization: `Bearer ${server.key}` } });
      return (await res.json()) as { grades: { score: number }[] };
    };
    const broken = await ors.session('gated_exact', { split: 'train', index: 0 }, async (s) => {
      expect(String(await s.callTool('gated_failure', { gate }).catch((e: unknown) => e))).toContain('RFT_ERR_ORS_CALL_FAILED');
      return s.sid;
    });
    const played = await ors.session('gated_exact', { split: 'train', index: 0 }, async (s) => {
      await s.getPrompt();
      return s.sid;
    });
    expect(ors.swallowed).toEqual([]);
    expect((await record(played)).grades.map((g) => g.score)).toEqual([0]);
    expect((await record(broken)).grades).toEqual([]);
  }, 60_000);

  it('a grader that cannot grade is ours too: the submit is retried, then the client gives up, never a reward the model reads', async () => {
    await ors.session('gated_broken', { split: 'train', index: 0 }, async (s) => {
      const err = await s.callTool('submit', { answer: '42' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MaxRetriesError);
    });
  }, 60_000);
});
