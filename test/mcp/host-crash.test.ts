// Host MCP instances after a crash (issue 26, item 6): a rollout's `sandbox: false` stdio server that
// ignores its closed stdin (and a process it started) survived kill -9 of the server with ppid 1, and
// the restarted server never looked for them. Now the kernel ends the instance with the server (where
// setpriv exists), and the restart reaps its recorded process group, the child it started included.
// A real `serve` process killed with SIGKILL, the published memory server behind a wrapper.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it, onTestFinished } from 'vitest';
import { postToolCall, spawnServer } from '../helpers/child-server.js';
import { fixtureGraders, fixtureTools, functionCall, newTrace } from '../helpers/fixtures.js';
import { pidsWith, serverEntry, until, writeMcpJson } from './helpers.js';

const KEY = 'mcp-host-crash-key-0123456789abcdef';
const dataDir = mkdtempSync(join(tmpdir(), 'rft-mcp-crash-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

// Ignores the end of stdin (an interval keeps it alive) and starts a child of its own, in its group.
const wrapper = [
  "require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)', process.argv[2] + ':child'], { stdio: 'ignore' });",
  'setInterval(() => {}, 1 << 30);',
  'import(process.argv[1]);',
].join(' ');

it('ends a host instance that ignores its closed stdin when the server is killed, and what it started by the restart at the latest', { timeout: 120_000 }, async () => {
  const mcp = writeMcpJson({
    hold: { command: process.execPath, args: ['-e', wrapper, serverEntry('server-memory'), 'host-crash:${RFT_TRACE_ID}'], env: { MEMORY_FILE_PATH: '${RFT_WORKSPACE}/m.jsonl' }, prefix: 'hold_', tools: ['read_graph'] },
  });
  const env = { RFT_DATA_DIR: dataDir, RFT_API_KEYS: `t:${KEY}`, RFT_SANDBOX: 'process', RFT_MCP_CONFIG: mcp, RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders, RFT_LOG_LEVEL: 'info' };
  const server = await spawnServer(env);
  const trace = newTrace();
  const reply = await postToolCall(server.url, KEY, functionCall('hold_read_graph', {}, { trace_id: trace }));
  expect(reply.status).toBe(200);
  const instance = `host-crash:${trace}`;
  const child = `${instance}:child`;
  // Whatever happens above, none of it stays running on this machine.
  onTestFinished(async () => {
    for (const pid of [...(await pidsWith(instance)), ...(await pidsWith(child))]) process.kill(pid, 'SIGKILL');
  });
  await until(async () => (await pidsWith(instance)).length === 1 && (await pidsWith(child)).length === 1, 20_000, 'the instance and its child running');

  await server.stop('SIGKILL');
  // The kernel's parent-death signal, where util-linux's setpriv is installed: the instance itself goes at once.
  if (existsSync('/usr/bin/setpriv')) await until(async () => (await pidsWith(instance)).length === 0, 10_000, 'the instance gone with the server');
  const again = await spawnServer(env);
  await until(async () => (await pidsWith(instance)).length === 0 && (await pidsWith(child)).length === 0, 20_000, 'nothing of the instance left after the restart');
  expect(again.stdout()).toMatch(/reaped host MCP instances left by a previous run/);
  await again.stop();
});
