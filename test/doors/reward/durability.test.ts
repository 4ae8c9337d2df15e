// The reward door's fsync policy (src/store/README.md, "Fsync policy"), on a real server process on
// SQLite (sync full) whose fdatasync is held for good once a gate file exists (hold-fsync.mjs): a
// reward grade, which no promise depends on, is answered once committed, without its fsync, and its
// record is there after kill -9 right after the reply; a tool call's write (its exactly-once key and
// budget depend on it) is never answered while the fsync is held.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { fixtureTools, functionCall, newTrace } from '../../helpers/fixtures.js';
import { postToolCall, spawnServer, type ChildServer } from '../../helpers/child-server.js';
import { repoRoot } from '../../helpers/server.js';

const KEY = 'durability-test-key-0123456789';

const privateUrl = (s: ChildServer): string => /private listener [^\n]*?: (http\S+)/.exec(s.stderr())![1]!;

async function reward(door: string, response: string): Promise<{ status: number; body: unknown }> {
  const res = await request(`${door}/reward/answer_match`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'What is six times seven?', response: `Answer: ${response}`, label: '42' }),
    headersTimeout: 30_000,
  });
  return { status: res.statusCode, body: await res.body.json() };
}

describe('the reward door, without its fsync', () => {
  it("answers a grade once committed while fsync never ends, keeps it through kill -9, and holds a tool call's reply", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-reward-durability-'));
    const hold = join(dataDir, 'hold-fsync');
    const env = {
      RFT_API_KEYS: `t:${KEY}`, RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: join(repoRoot, 'graders'), RFT_DATA_DIR: join(dataDir, 'data'),
      RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'full', RFT_TEST_HOLD_FSYNC: hold,
    };
    try {
      const server = await spawnServer(env, { command: [process.execPath, '--import', join(import.meta.dirname, 'hold-fsync.mjs'), join(repoRoot, 'bin/rft-endpoints.js'), 'serve'] });
      const door = privateUrl(server);
      writeFileSync(hold, ''); // from now on, no fdatasync of the WAL ever ends
      expect(await reward(door, '42')).toEqual({ status: 200, body: 1 });
      // A tool call is recorded before it runs, and answered only once that record is fsynced: never, here.
      const trace = newTrace();
      const call = functionCall('echo', { text: 'waits for its fsync' }, { trace_id: trace });
      const toolReply = { settled: false };
      void postToolCall(server.url, KEY, call).then(() => (toolReply.settled = true), () => (toolReply.settled = true));
      // A grade after it is answered still, the tool call's durable write pending (no read of the record waits for it).
      expect(await reward(door, '41')).toEqual({ status: 200, body: 0 });
      expect(toolReply.settled).toBe(false);
      await server.stop('SIGKILL'); // right after the replies: the grades were never fsynced

      rmSync(hold);
      const again = await spawnServer(env);
      try {
        const res = await request(`${again.url}/v1/rollouts?door=reward`, { headers: { authorization: `Bearer ${KEY}` } });
        const body = (await res.body.json()) as { rollouts: { trace_id: string; last_score: number | null }[] };
        expect(body.rollouts.map((r) => r.last_score).sort()).toEqual([0, 1]);
        // The tool call's start was committed too (the kill cut it before it ran): interrupted, never run.
        const r = await request(`${again.url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${KEY}` } });
        const calls = ((await r.body.json()) as { calls: { call_id: string; status: string }[] }).calls;
        expect(calls).toEqual([expect.objectContaining({ call_id: call.call_id, status: 'interrupted' })]);
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
