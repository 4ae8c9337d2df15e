// The unit_tests grader tells the workspace the rollout worked in from a new one by the sandbox's id
// (recorded with every call), end to end over real HTTP, on every driver: nothing the rollout does in
// its own workspace (a patch that fails, a bridged MCP tool's write, a process it leaves behind) gets
// its grade refused (a 5xx the trainer answers by discarding the rollout instead of training on its
// score), and a workspace genuinely made anew is still refused (issue 26, item 2).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { NODE_MODULES, serverEntry, writeMcpJson } from '../mcp/helpers.js';
import { driversPresent, GVISOR_ENGINE, type TestDriver } from '../sandbox/helpers.js';

const present = await driversPresent();
const row = JSON.parse(readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8').trim().split('\n')[0]!) as Record<string, unknown>;

const env: Record<TestDriver, Record<string, string>> = {
  process: { RFT_SANDBOX: 'process' },
  bwrap: { RFT_SANDBOX: 'bwrap' },
  docker: { RFT_SANDBOX: 'docker' },
  gvisor: { RFT_SANDBOX: 'docker', RFT_DOCKER_HOSTS: GVISOR_ENGINE, RFT_DOCKER_RUNTIME: 'runsc' },
};

/** docs/mcp.md's filesystem server, one instance per rollout inside its sandbox. */
const mcpJson = () =>
  writeMcpJson({
    files: { command: 'node', args: [serverEntry('server-filesystem'), '/workspace'], prefix: 'fs_', tools: ['write_file', 'list_directory'], sandbox: true, mounts: [NODE_MODULES] },
  });

/** Lets at least `ms` pass since `since` (the old check allowed 2 s between the last call and a change). */
async function elapse(since: number, ms: number): Promise<void> {
  const left = since + ms - Date.now();
  if (left > 0) await new Promise((r) => setTimeout(r, left));
}

/** Host pids whose command line holds `marker` (the process and bwrap drivers' sandboxes, and runc containers). */
async function hostPidsWith(marker: string): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    if (cmd.includes(marker) && !/\) Z /.test(stat)) out.push(Number(name));
  }
  return out;
}

for (const driver of ['process', 'bwrap', 'docker', 'gvisor'] as const) {
  describeIf(present[driver], `${driver} driver`, `${driver} sandbox driver not available`)(`unit_tests survival check on ${driver}`, () => {
    let server: TestServer;
    beforeAll(async () => {
      // The process driver has no /workspace for the filesystem server to be given (no mount namespace).
      const mcp = driver === 'process' ? {} : { RFT_MCP_CONFIG: mcpJson() };
      server = await startTestServer({ env: { ...env[driver], ...mcp, RFT_TOOL_TIMEOUT_MS: '60000' } });
    }, 120_000);
    afterAll(() => server?.close());

    const post = async (path: string, body: unknown, method = 'POST') => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${server.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, json: (await res.json()) as { output?: string; score?: number; error?: { code: string } } };
    };
    const call = async (traceId: string, name: string, args: unknown) => {
      const r = await post('/tools', { type: 'function_call', call_id: `c_${randomUUID()}`, name, arguments: JSON.stringify(args), trace_id: traceId, item: row });
      expect(r.status, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.json)}`).toBe(200);
      return r.json.output ?? '';
    };
    const grade = (traceId: string) => post('/graders/unit_tests', { sample: { output_text: 'Done.', output_tools: [], choices: [] }, item: row, trace_id: traceId });

    it('(a) grades a rollout whose last call was a failing apply_patch, and the patch leaves nothing behind', async () => {
      const traceId = `trace_${randomUUID()}`;
      await call(traceId, 'shell', { command: 'echo ok' });
      await elapse(Date.now(), 3_000);
      const out = await call(traceId, 'apply_patch', { patch: '*** Begin Patch\n*** Add File: nd/file\n+a\n*** Add File: nd/file/x\n+b\n*** End Patch' });
      expect(out).toMatch(/^Error: /);
      const g = await grade(traceId);
      expect(g.status, JSON.stringify(g.json)).toBe(200);
      expect(typeof g.json.score).toBe('number');
      expect(await call(traceId, 'shell', { command: 'if [ -e nd ]; then echo nd-left; else echo nd-absent; fi' })).toContain('nd-absent');
    }, 120_000);

    it.runIf(driver !== 'process')('(b) grades a rollout whose last call was a bridged MCP tool that wrote to the workspace', async () => {
      const traceId = `trace_${randomUUID()}`;
      await call(traceId, 'shell', { command: 'echo ok' });
      await elapse(Date.now(), 3_000);
      expect(await call(traceId, 'fs_write_file', { path: '/workspace/notes.txt', content: 'from the bridge\n' })).not.toMatch(/^Error/);
      const g = await grade(traceId);
      expect(g.status, JSON.stringify(g.json)).toBe(200);
      expect(typeof g.json.score).toBe('number');
    }, 120_000);

    // The process driver runs no MCP instance here (see beforeAll); its case is in the abuse suite
    // (test/sandbox/abuse.test.ts: a daemon does not outlive its exec while a spawned process runs).
    it.runIf(driver !== 'process')("(c) ends what a command left running with its exec, while the rollout's sandboxed MCP instance runs", async () => {
      const traceId = `trace_${randomUUID()}`;
      const marker = `loop${randomUUID().slice(0, 8)}`;
      // Starts the rollout's MCP instance inside its sandbox: a process of the sandbox uid that outlives every exec.
      expect(await call(traceId, 'fs_list_directory', { path: '/workspace' })).not.toMatch(/^Error/);
      await call(traceId, 'shell', { command: `setsid sh -c 'while :; do date > loop.txt; sleep 0.1; done' ${marker} >/dev/null 2>&1 </dev/null &` });
      // Seen from inside the sandbox (gVisor's processes are not on the host) and from the host (bwrap's
      // commands each have their own pid namespace): gone from both. The bracket keeps the probe out of its own match.
      const probe = `grep -l '${marker.slice(0, 4)}[${marker[4]}]${marker.slice(5)}' /proc/[0-9]*/cmdline 2>/dev/null | wc -l`;
      await waitFor('the left loop to end', async () => {
        const inside = (await call(traceId, 'shell', { command: probe })).match(/--- stdout ---\n\s*(\d+)/)?.[1];
        return inside === '0' && (await hostPidsWith(marker)).length === 0 ? true : undefined;
      }, 15_000);
      const g = await grade(traceId);
      expect(g.status, JSON.stringify(g.json)).toBe(200);
      expect(await hostPidsWith(marker)).toEqual([]);
    }, 120_000);

    it('refuses to grade a workspace made anew after the rollout worked in it', async () => {
      const traceId = `trace_${randomUUID()}`;
      await call(traceId, 'shell', { command: 'echo work > work.txt' });
      expect((await post(`/v1/rollouts/${traceId}`, undefined, 'DELETE')).status).toBe(200);
      const g = await grade(traceId);
      expect(g.status).toBe(500);
      expect(g.json.error?.code).toBe('RFT_ERR_GRADER_FAILED');
    }, 120_000);
  });
}
