// A server killed with SIGKILL and restarted, on every sandbox driver: a rollout whose sandbox the
// killed process made has lost its workspace, so its calls and its grade answer 503
// RFT_ERR_SANDBOX_LOST (not recorded, not charged: the trainer drops the rollout) instead of running
// on a new, empty workspace the model would see its work vanish from and the grader would score; the
// call the kill cut answers RFT_ERR_CALL_INTERRUPTED to its retries.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { request } from 'undici';
import { afterEach, expect, it } from 'vitest';
import { META } from '../../src/doors/mcp/server.js';
import { spawnServer, untilCallStatus, type ChildServer } from '../helpers/child-server.js';
import { functionCall, newTrace } from '../helpers/fixtures.js';
import { describeIf } from '../helpers/require.js';
import { repoRoot } from '../helpers/server.js';
import { driversPresent, GVISOR_ENGINE, type TestDriver } from '../sandbox/helpers.js';

const KEY = 'restart-sandbox-key-0123456789abcdef';
const present = await driversPresent();
const row = JSON.parse(readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8').split('\n')[0]!) as Record<string, unknown>;
const item = { ...row, messages: undefined, tools: undefined };

const ENV: Record<TestDriver, Record<string, string>> = {
  process: { RFT_SANDBOX: 'process' },
  bwrap: { RFT_SANDBOX: 'bwrap' },
  docker: { RFT_SANDBOX: 'docker' },
  gvisor: { RFT_SANDBOX: 'docker', RFT_DOCKER_HOSTS: GVISOR_ENGINE, RFT_DOCKER_RUNTIME: 'runsc' },
};

const started: ChildServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  // SIGTERM: a server still up destroys its sandboxes (a killed one's were reaped by its restart).
  await Promise.all(started.splice(0).map((s) => s.stop('SIGTERM')));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function serve(driver: TestDriver, dataDir: string): Promise<ChildServer> {
  const s = await spawnServer(
    {
      ...ENV[driver], RFT_DATA_DIR: dataDir, RFT_API_KEYS: `t:${KEY}`, RFT_RATE_LIMIT: '0',
      RFT_TOOLS_DIR: join(repoRoot, 'tools'), RFT_GRADERS_DIR: join(repoRoot, 'graders'), RFT_SANDBOX_TEMPLATES: join(repoRoot, 'examples'),
    },
    120_000,
  );
  started.push(s);
  return s;
}

type Reply = { status: number; body: { output?: string; score?: number; error?: { code: string } } };

async function post(url: string, path: string, body: unknown): Promise<Reply> {
  const res = await request(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.statusCode, body: (await res.body.json()) as never };
}

const shell = (url: string, trace: string, command: string, callId?: string) =>
  post(url, '/tools', functionCall('shell', { command }, { trace_id: trace, item, ...(callId ? { call_id: callId } : {}) }));

async function budgetUsed(url: string, trace: string): Promise<number> {
  const res = await request(`${url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${KEY}` } });
  return ((await res.body.json()) as { budget: { used: number } }).budget.used;
}

for (const driver of ['process', 'bwrap', 'docker', 'gvisor'] as const) {
  describeIf(present[driver], `a restart with the ${driver} driver`, `${driver} sandbox driver not available`)(`kill -9 and restart (${driver})`, () => {
    it("answers the rollout's later calls and its grade 503 RFT_ERR_SANDBOX_LOST, its cut call RFT_ERR_CALL_INTERRUPTED, and charges neither", { timeout: 300_000 }, async () => {
      const dataDir = await mkdtemp(join(tmpdir(), `rft-restart-${driver}-`));
      dirs.push(dataDir);
      const first = await serve(driver, dataDir);
      const trace = newTrace();
      expect(await shell(first.url, trace, 'echo my-work > work.txt && cat work.txt')).toMatchObject({ status: 200, body: { output: expect.stringContaining('my-work') } });
      const cut = shell(first.url, trace, 'echo started >> marker; sleep 20', 'call_cut').catch((e: Error) => e);
      await untilCallStatus(first.url, KEY, trace, 'call_cut', 'running');
      await first.stop('SIGKILL');
      expect(await cut).toBeInstanceOf(Error);
      started.splice(started.indexOf(first), 1);

      const again = await serve(driver, dataDir);
      for (let attempt = 0; attempt < 2; attempt++) {
        const retry = await shell(again.url, trace, 'echo started >> marker; sleep 20', 'call_cut');
        expect({ status: retry.status, code: retry.body.error?.code }).toEqual({ status: 503, code: 'RFT_ERR_CALL_INTERRUPTED' });
        const next = await shell(again.url, trace, 'cat work.txt', 'call_next');
        expect({ status: next.status, code: next.body.error?.code }).toEqual({ status: 503, code: 'RFT_ERR_SANDBOX_LOST' });
      }
      // Over /mcp, the same answer as a retryable JSON-RPC error.
      const client = new Client({ name: 'restart-sandbox-test', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${again.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${KEY}`, 'x-rft-trace-id': trace } } }));
      await expect(client.callTool({ name: 'read_file', arguments: { path: 'work.txt' }, _meta: { [META.idempotencyKey]: 'mcp-read' } })).rejects.toMatchObject({
        data: { code: 'RFT_ERR_SANDBOX_LOST', status: 503, retryable: true },
      });
      await client.close();
      // The grade could not be made on the rollout's workspace: a 5xx, never a score on a new one.
      const graded = await post(again.url, '/graders/unit_tests', { sample: { output_text: 'Done.', output_tools: [], choices: [] }, item, trace_id: trace });
      expect({ status: graded.status, code: graded.body.error?.code, score: graded.body.score }).toEqual({ status: 503, code: 'RFT_ERR_SANDBOX_LOST', score: undefined });
      // Charged for the one call that ran and answered.
      expect(await budgetUsed(again.url, trace)).toBe(1);
      // A new rollout works as before.
      expect(await shell(again.url, newTrace(), 'echo fresh')).toMatchObject({ status: 200, body: { output: expect.stringContaining('fresh') } });
    });
  });
}
