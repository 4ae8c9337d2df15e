// A bridged call whose sandboxed MCP server dies because its sandbox did (a container killed from
// outside, the bwrap supervisor killed): a failure of ours, answered 503 and not charged, never
// "the server was killed during this call" shown to the model (it was, before: a 200 the trainer
// trained on). The server's own death (the model's doing) is still the model's to read.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { driversPresent, GVISOR_ENGINE } from '../sandbox/helpers.js';
import { callTool, getJson, until, writeMcpJson } from './helpers.js';

const present = await driversPresent();
const FIXTURES = join(repoRoot, 'test/mcp/fixtures');
const run = promisify(execFile);

/** Live children of this process whose argv0 is `argv0` (the bwrap driver's supervisor). */
async function children(argv0: string): Promise<number[]> {
  const out: number[] = [];
  for (const p of await readdir('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    const cmd = await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '');
    const stat = (await readFile(`/proc/${p}/stat`, 'utf8').catch(() => '')).split(') ')[1]?.split(' ') ?? [];
    if (cmd.split('\0')[0] === argv0 && stat[0] !== 'Z' && Number(stat[1]) === process.pid) out.push(Number(p));
  }
  return out;
}

const engines = { docker: 'unix:///var/run/docker.sock', gvisor: GVISOR_ENGINE } as const;

for (const driver of ['bwrap', 'docker', 'gvisor'] as const) {
  describeIf(present[driver], `MCP bridge on ${driver}`, `${driver} sandbox driver not available`)(`a bridged call whose sandbox is lost under it (${driver})`, () => {
    let srv: TestServer;

    beforeAll(async () => {
      srv = await startTestServer({
        env: {
          RFT_SANDBOX: driver === 'gvisor' ? 'docker' : driver,
          ...(driver === 'gvisor' ? { RFT_DOCKER_HOSTS: GVISOR_ENGINE, RFT_DOCKER_RUNTIME: 'runsc' } : {}),
          RFT_TOOL_TIMEOUT_MS: '60000',
          RFT_MCP_CONFIG: writeMcpJson({
            slow: { command: 'node', args: [join(FIXTURES, 'big-output-server.mjs')], sandbox: true, mounts: [FIXTURES], prefix: 'slow_' },
          }),
        },
      });
    });
    afterAll(async () => {
      await srv?.close();
    });

    /** Takes the rollout's sandbox down from outside: its container killed, or the bwrap supervisor. */
    async function takeDown(traceId: string): Promise<void> {
      if (driver === 'bwrap') {
        const sups = await children('rft-supervisor');
        expect(sups).toHaveLength(1);
        process.kill(sups[0]!, 'SIGKILL');
        return;
      }
      const host = ['-H', engines[driver]];
      const { stdout } = await run('docker', [...host, 'ps', '-q', '--filter', `label=rft-endpoints.trace_id=${traceId}`]);
      expect(stdout.trim().split('\n')).toHaveLength(1);
      await run('docker', [...host, 'kill', stdout.trim()]);
    }

    it('answers 503 for the call in flight, records nothing and charges nothing', { timeout: 120_000 }, async () => {
      const t = `trace_${randomUUID()}`;
      expect(await callTool(srv, t, 'slow_echo', { message: 'up' }, 'call_up')).toMatchObject({ status: 200, output: 'up' });
      const waiting = callTool(srv, t, 'slow_wait', { ms: 40_000 }, 'call_lost');
      // The call has reached the server (it is in flight) before the sandbox goes.
      await until(async () => ((await getJson(srv, '/readyz')) as { mcp: { instances: number } }).mcp.instances === 1, 10_000, 'the instance running', 100);
      await new Promise((r) => setTimeout(r, 500));
      await takeDown(t);
      const lost = await waiting;
      expect(lost.status, JSON.stringify(lost.body)).toBeGreaterThanOrEqual(500);
      expect(lost.body).toMatchObject({ error: { code: expect.stringMatching(/^RFT_ERR_SANDBOX_(LOST|INTERRUPTED)$/) as string } });
      const rec = await getJson(srv, `/v1/rollouts/${t}`);
      expect((rec.calls as { call_id: string }[]).map((c) => c.call_id)).toEqual(['call_up']);
      expect(rec.budget).toMatchObject({ used: 1 });
    });

    // bwrap runs each command in a PID namespace of its own: a command cannot see the server there.
    it.skipIf(driver === 'bwrap')("shows the model its server's death when its own command killed it", { timeout: 120_000 }, async () => {
      const t = `trace_${randomUUID()}`;
      expect(await callTool(srv, t, 'slow_echo', { message: 'up' })).toMatchObject({ status: 200, output: 'up' });
      const waiting = callTool(srv, t, 'slow_wait', { ms: 40_000 }, 'call_killed');
      await new Promise((r) => setTimeout(r, 500));
      const kill = 'for p in /proc/[0-9]*; do grep -q big-output-serve[r] $p/cmdline 2>/dev/null && kill -9 ${p#/proc/}; done; echo done';
      expect((await callTool(srv, t, 'shell', { command: kill })).output).toContain('done');
      const killed = await waiting;
      expect(killed, JSON.stringify(killed.body)).toMatchObject({ status: 200, output: expect.stringContaining('MCP server "slow" was killed') as string });
    });
  });
}
