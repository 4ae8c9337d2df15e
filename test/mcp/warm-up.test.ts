// A rollout server the warm pool starts ahead is handed over after one warm-up call (issue 24: a
// fresh server's first tools/call compiles its call path, a few ms a rollout's first bridged call
// would pay): the call names no tool of the server, so none runs, and a server that ends on it is
// not handed over. The pool's own readiness step (McpBridge.prestarts), over a process on the host
// (what the sandbox drivers start in the pool is the same process; test/mcp/bridge-pooled.test.ts
// runs them there).
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { McpBridge } from '../../src/mcp/bridge.js';
import { loadMcpConfig } from '../../src/mcp/config.js';
import { WARM_UP_TOOL, type McpInstance } from '../../src/mcp/instance.js';
import { startProgram } from '../../src/sandbox/host/spawn.js';
import { repoRoot } from '../helpers/server.js';
import { writeMcpJson } from './helpers.js';

const FIXTURE = join(repoRoot, 'test/mcp/fixtures/request-log-server.mjs');
const started: McpInstance[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((i) => i.stop()));
});

/** The pool's readiness step for a server run with `args`, over the process it would have started; the server's request log. */
async function readied(args: string[]): Promise<{ instance: McpInstance; requests: () => string[] }> {
  const log = join(mkdtempSync(join(tmpdir(), 'rft-warm-up-')), 'requests.log');
  const config = loadMcpConfig(writeMcpJson({ logged: { command: 'node', args: [FIXTURE, log, ...args], sandbox: true, mounts: [] } }), true)!;
  const [spec] = McpBridge.prestarts(config, 1 << 20);
  const proc = startProgram({ argv: spec!.argv, cwd: repoRoot, env: { PATH: process.env.PATH ?? '' } });
  const instance = (await spec!.ready!(proc)) as McpInstance;
  started.push(instance);
  return { instance, requests: () => readFileSync(log, 'utf8').trim().split('\n') };
}

it('hands over an instance whose server has answered one call, of a tool it does not have, and ran none of its own', async () => {
  const { instance, requests } = await readied([]);
  expect(instance.alive).toBe(true);
  expect(requests()).toEqual(['initialize', `tools/call ${WARM_UP_TOOL}`]);
  const r = await instance.callTool('echo', { message: 'hi' }, { signal: new AbortController().signal, timeoutMs: 5_000 });
  expect(r.content).toEqual([{ type: 'text', text: 'hi' }]);
  expect(requests().at(-1)).toBe('tools/call echo');
});

it('does not hand over a server that ended on the warm-up call', async () => {
  const { instance, requests } = await readied(['--exit-on-unknown']);
  expect(requests()).toEqual(['initialize', `tools/call ${WARM_UP_TOOL}`]);
  expect(instance.alive).toBe(false);
});
