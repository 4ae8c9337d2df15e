// The ORS door with coding rollouts in real sandboxes, on every driver that runs the coding example
// (as test/doors/nemo-gym/coding.test.ts: bwrap and Docker), driven as the ORS reference client drives it.
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeIf } from '../../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { driverCases } from '../../helpers/sandboxes.js';
import { OrsClient, TrlRollout } from '../../helpers/ors-client.js';
import { agentRftScore } from '../../helpers/agent-rft.js';

type Row = Record<string, unknown>;
const rows = readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;
const solution = (task: unknown) => readFileSync(join(repoRoot, `examples/coding/tasks/${String(task)}/solution.patch`), 'utf8');
const PING_MS = 200;

const drivers = driverCases.filter((c) => c.name !== 'process');
for (const [n, d] of drivers.entries()) {
  describeIf(d.available, `ORS door, coding on ${d.name}`, d.reason)(`ORS door, coding on ${d.name}`, () => {
    let server: TestServer;
    let ors: OrsClient;
    beforeAll(async () => {
      server = await startTestServer({ env: { RFT_SANDBOX: d.name, RFT_ORS_PING_MS: String(PING_MS), RFT_SQLITE_SYNC: 'normal' } });
      ors = new OrsClient(server.url, { token: server.key });
    });
    afterAll(() => server?.close());

    // 6 rollouts on the first driver, 2 on the others: the grader runs hidden tests in a fresh sandbox for each.
    it('episodes get the rewards the same calls and answers get through /tools and /graders/unit_tests', async () => {
      const count = n === 0 ? 6 : 2;
      const results: { reward: number; expected: number }[] = [];
      for (let batch = 0; batch < count; batch += 2) {
        await Promise.all(
          [batch, batch + 1].map((i) => {
            const index = i % rows.length;
            const row = rows[index]!;
            const calls: [string, Record<string, unknown>][] = i % 2 === 0 ? [['apply_patch', { patch: solution(row.task_id) }]] : [['list_files', {}]];
            return ors.session('coding', { split: 'train', index }, async (s) => {
              const trl = new TrlRollout(s);
              for (const [name, args] of calls) expect(await trl.call(name, args)).not.toMatch(/^Error/);
              await trl.call('submit', { answer: 'Fixed the bug.' });
              expect(trl.finished).toBe(true);
              results.push({ reward: trl.reward, expected: await agentRftScore(server, itemOf(row), calls, 'Fixed the bug.', '/graders/unit_tests') });
            });
          }),
        );
      }
      for (const r of results) expect(r.reward).toBe(r.expected);
      expect(results.filter((r) => r.reward === 1).length).toBe(count / 2);
    }, 600_000);

    it('a stream dropped while its command runs is resumed by task_id: the command runs once, with pings meanwhile', async () => {
      let drops = 0;
      const pings: string[] = [];
      const dropping = new OrsClient(server.url, {
        token: server.key,
        waitScale: 0.01,
        onComment: (line) => pings.push(line),
        onStream: ({ path, attempt, req, events }) => {
          if (drops === 0 && path.endsWith('/call') && attempt === 1 && events.length === 1) {
            drops++;
            req.destroy();
          }
        },
      });
      await dropping.session('coding', { split: 'train', index: 1 }, async (s) => {
        const command = { command: 'sleep 1; echo run >> runs.txt; wc -l < runs.txt' };
        const out = await s.callTool('shell', command);
        expect(out.blocks[0]!.text).toContain('1');
        const count = await s.callTool('shell', { command: 'wc -l < runs.txt' });
        expect(count.blocks[0]!.text.trim().split('\n').at(-1)?.trim()).toBe('1');
        // a second-long command on a stream that stays: comment lines every RFT_ORS_PING_MS
        pings.length = 0;
        await dropping.sse('/coding/call', { name: 'shell', input: { command: 'sleep 1' } }, { sid: s.sid, maxRetries: 0 });
        expect(pings.length).toBeGreaterThanOrEqual(3);
        expect(pings[0]).toBe(': ping');
        const rec = await fetch(`${server.url}/v1/rollouts/${s.sid}`, { headers: { authorization: `Bearer ${server.key}` } });
        expect(((await rec.json()) as { calls: unknown[] }).calls).toHaveLength(3);
      });
      expect(drops).toBe(1);
    }, 120_000);

    it.runIf(n === 0)("the client's /delete ends its session at once: the sandbox is destroyed, the session's pings are 404s", async () => {
      // This session's own sandbox, by its trace id (the sid): the file's other sessions, graded, may still hold theirs.
      const sandboxes = server.app.rft.sandboxes!;
      const destroy = sandboxes.destroy.bind(sandboxes);
      const destroyed: string[] = [];
      const spy = vi.spyOn(sandboxes, 'destroy').mockImplementation(async (traceId) => {
        const had = await destroy(traceId);
        if (had) destroyed.push(traceId);
        return had;
      });
      const client = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
      try {
        const sid = await client.session('coding', { split: 'train', index: 0 }, async (s) => {
          await s.callTool('list_files', {});
          expect(destroyed).toEqual([]);
          return s.sid;
        });
        expect(client.swallowed).toEqual([]);
        expect(destroyed).toEqual([sid]);
        await expect(client.request('POST', '/ping', undefined, sid, false)).rejects.toMatchObject({ status: 404 });
      } finally {
        spy.mockRestore();
      }
    }, 120_000);

    it('two concurrent sessions of one task never see each other\'s workspace', async () => {
      const write = (text: string) =>
        ors.session('coding', { split: 'train', index: 0 }, async (s) => {
          await s.callTool('write_file', { path: 'mine.txt', content: text });
          return (await s.callTool('shell', { command: 'cat mine.txt; ls -a' })).blocks[0]!.text;
        });
      const [a, b] = await Promise.all([write('from A'), write('from B')]);
      expect(a).toContain('from A');
      expect(a).not.toContain('from B');
      expect(b).toContain('from B');
      expect(b).not.toContain('from A');
    }, 120_000);
  });
}
