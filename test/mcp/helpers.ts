// Shared setup for the bridge tests: mcp.json files pointing at the MCP servers published on npm
// (devDependencies of this repo, installed by `npm ci`), calls through POST /tools, process lookups.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, type TestServer } from '../helpers/server.js';

export const NODE_MODULES = join(repoRoot, 'node_modules');

/** The entry file of a published MCP server package. */
export function serverEntry(pkg: 'server-memory' | 'server-filesystem' | 'server-everything'): string {
  return join(NODE_MODULES, '@modelcontextprotocol', pkg, 'dist', 'index.js');
}

/** A rollout's memory server is named by an argument it ignores: the host pids of it are `pidsWith(rolloutMarker(traceId))`. */
export const rolloutMarker = (traceId: string): string => `rollout:${traceId}`;

/**
 * @modelcontextprotocol/server-memory as a rollout server inside the rollout's sandbox, its memory
 * file in the workspace, offering `tools` with the prefix `mem_`.
 */
export function sandboxedMemoryServer(tools: string[], marker = rolloutMarker('${RFT_TRACE_ID}')): Record<string, unknown> {
  return {
    command: 'node',
    args: [serverEntry('server-memory'), marker],
    env: { MEMORY_FILE_PATH: '${RFT_WORKSPACE}/memory.jsonl' },
    prefix: 'mem_',
    tools,
    // Its writes read, change and rewrite one file: parallel ones would lose each other's changes.
    serial: true,
    sandbox: true,
    mounts: [NODE_MODULES],
  };
}

/** Writes an mcp.json with these servers into a fresh directory; returns its path. */
export function writeMcpJson(servers: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-mcp-test-'));
  const file = join(dir, 'mcp.json');
  writeFileSync(file, JSON.stringify({ mcpServers: servers }, null, 2));
  return file;
}

export interface CallReply {
  status: number;
  output: string;
  body: Record<string, unknown>;
}

/** A tool call as the trainer sends it. */
export async function callTool(srv: TestServer, traceId: string, name: string, args: unknown, callId = `call_${Math.random().toString(36).slice(2)}`, item: Record<string, unknown> = {}): Promise<CallReply> {
  const r = await fetch(`${srv.url}/tools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'function_call', call_id: callId, name, arguments: JSON.stringify(args), trace_id: traceId, item }),
  });
  const body = (await r.json()) as Record<string, unknown>;
  return { status: r.status, output: typeof body.output === 'string' ? body.output : '', body };
}

export async function getJson(srv: TestServer, path: string, method = 'GET'): Promise<Record<string, unknown>> {
  const r = await fetch(`${srv.url}${path}`, { method, headers: { authorization: `Bearer ${srv.key}` } });
  return (await r.json()) as Record<string, unknown>;
}

/**
 * Host pids of live `node` processes with `marker` among their arguments (sandboxed ones included;
 * the bwrap processes around a sandboxed server carry the same arguments but are not node).
 */
export async function pidsWith(marker: string): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const argv = cmd.split('\0');
    if (/(^|\/)node$/.test(argv[0] ?? '') && argv.includes(marker) && !/\) Z /.test(stat)) out.push(Number(name));
  }
  return out;
}

export async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition', everyMs = 25): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
