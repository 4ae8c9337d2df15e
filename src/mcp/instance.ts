// One running instance of a configured MCP server, connected with the SDK's client: a stdio server
// on the host or inside a rollout's sandbox (both a SandboxProcess), or a Streamable HTTP server.
import { Client, StreamableHTTPClientTransport, type CallToolResult, type Tool, type Transport } from '@modelcontextprotocol/client';
import { isAbsolute, resolve } from 'node:path';
import { errors } from '../errors.js';
import { SANDBOX_PATH } from '../sandbox/host/local-sandbox.js';
import { WORKSPACE_MOUNT } from '../sandbox/workspace/paths.js';
import { startProgram } from '../sandbox/host/spawn.js';
import { treeMemory } from '../sandbox/host/memory.js';
import { recordHostProcess, withDeathSignal } from './host-processes.js';
import type { PrestartSpec, Sandbox, SandboxProcess } from '../sandbox/types.js';
import { expand, usesVariables, type McpServerSpec, type Variable } from './config.js';
import { ProcessTransport } from './stdio-transport.js';

const CLIENT_INFO = { name: 'rft-endpoints', version: '1' };

/** The tool a warm-up call names (McpInstance.warm): none of a server's, so none of its tools runs. */
export const WARM_UP_TOOL = 'rft-endpoints-warm-up-no-such-tool';

/** Where an instance runs: inside a rollout's sandbox, or on the host. */
export type Placement =
  | { kind: 'sandbox'; sandbox: Sandbox; traceId: string }
  | {
      kind: 'host';
      traceId: string | null;
      /** The instance's private directory (`${RFT_WORKSPACE}`), when it runs for a rollout. */
      workspace: string | null;
      /** Environment every host stdio server inherits (PATH, HOME, ...; never the server's secrets). */
      inheritedEnv: Record<string, string>;
      /** Relative `cwd`s resolve against this (the directory of mcp.json). */
      baseDir: string;
      /** Where its process group is recorded while it runs, for the next start to reap after a crash (host-processes.ts). */
      records: string;
    };

export class McpInstance {
  private stopped = false;
  private readonly endListeners: (() => void)[] = [];

  private constructor(
    readonly server: McpServerSpec,
    private readonly client: Client,
    private readonly transport: Transport,
  ) {}

  /**
   * Starts the server and completes the MCP handshake; throws RFT_ERR_MCP_START with its stderr, or
   * RFT_ERR_TOOL_START_TIMEOUT when the whole start (its process, then the handshake) outlasts the
   * server's `startTimeoutMs` (the process is then killed).
   * `readLimit`: a stdio server's largest message kept whole (past it, see stdio-transport.ts).
   */
  static async start(server: McpServerSpec, where: Placement, readLimit: number): Promise<McpInstance> {
    const vars = variables(where);
    let transport: Transport | undefined;
    let late = false;
    const starting = (async () => {
      if (server.url !== undefined) {
        const headers = Object.fromEntries(Object.entries(server.headers).map(([k, v]) => [k, expand(v, vars)]));
        transport = new StreamableHTTPClientTransport(new URL(expand(server.url, vars)), { requestInit: { headers } });
      } else {
        const proc = await spawnServer(server, where, vars);
        transport = new ProcessTransport(proc, readLimit);
        if (late) await transport.close(); // the bound passed while it was being spawned: the handshake fails at once
      }
      return McpInstance.connect(server, transport);
    })();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        late = true;
        void transport?.close().catch(() => {});
        reject(errors.toolStartTimeout(`MCP server "${server.name}"`, server.startTimeoutMs));
      }, server.startTimeoutMs);
    });
    try {
      return await Promise.race([starting, bound]);
    } finally {
      clearTimeout(timer);
      // Past the bound, whatever the start still makes is stopped, and its failure is the bound's.
      starting.then((i) => (late ? i.stop() : undefined), () => {});
    }
  }

  /**
   * An instance over a stdio server process already running (started by a pooled sandbox before its
   * rollout took it: prestartOf): only the MCP handshake is left.
   */
  static adopt(server: McpServerSpec, proc: SandboxProcess, readLimit: number): Promise<McpInstance> {
    return McpInstance.connect(server, new ProcessTransport(proc, readLimit));
  }

  private static async connect(server: McpServerSpec, transport: Transport): Promise<McpInstance> {
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    try {
      await client.connect(transport, { timeout: server.startTimeoutMs });
    } catch (e) {
      await transport.close().catch(() => {});
      if (transport instanceof ProcessTransport && transport.exit?.lost) throw transport.exit.lost;
      const end = transport instanceof ProcessTransport ? describeEnd(transport, e) : { how: (e as Error).message, stderr: '' };
      throw errors.mcpStart(server.name, end.stderr ? `${end.how}; its stderr ends with:\n${end.stderr}` : end.how);
    }
    const instance = new McpInstance(server, client, transport);
    client.onclose = () => instance.ended();
    return instance;
  }

  /** False once the server exited (crashed, killed) or was stopped. */
  get alive(): boolean {
    return !this.stopped;
  }

  /** Calls `listener` once the instance is gone (exited, killed, stopped). */
  onEnd(listener: () => void): void {
    if (this.stopped) listener();
    else this.endListeners.push(listener);
  }

  private ended(): void {
    if (this.stopped && this.endListeners.length === 0) return;
    this.stopped = true;
    for (const l of this.endListeners.splice(0)) l();
  }

  /**
   * Set when the server ended because its sandbox did (SandboxProcess.endedBySandbox): the error to
   * answer instead of its end, which was not its own doing.
   */
  get lost(): Error | undefined {
    return this.transport instanceof ProcessTransport ? this.transport.exit?.lost : undefined;
  }

  /**
   * Bytes its process tree holds (PSS, from the host's /proc) when it runs on the host; null for one
   * in a sandbox (its sandbox's measurement counts it: bridge.ts) or over HTTP (not ours to hold).
   */
  async memoryBytes(): Promise<number | null> {
    const pid = this.transport instanceof ProcessTransport ? (this.transport.proc as { pid?: unknown }).pid : undefined;
    return typeof pid === 'number' && this.alive ? treeMemory(pid) : null;
  }

  /** Why the instance is gone, for the model and the logs: exit status and the tail of its stderr. */
  describeEnd(cause?: unknown): { how: string; stderr: string } {
    if (this.transport instanceof ProcessTransport) return describeEnd(this.transport, cause);
    return { how: cause instanceof Error ? cause.message : 'closed the connection', stderr: '' };
  }

  /** Every tool the server offers (all pages). */
  async listTools(): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.client.listTools(cursor !== undefined ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  /**
   * One `tools/call` naming a tool the server does not have (WARM_UP_TOOL), its answer ignored: a
   * server's first call compiles its call path (a fresh `server-everything` answered its first `echo`
   * in about 4 ms, later ones in 0.5; after this warm-up the first took 2 ms), so a pooled instance
   * pays that before a rollout takes it, and no tool of the server runs. A server that ends on it is
   * no longer `alive`, and is not handed over.
   */
  async warm(timeoutMs: number): Promise<void> {
    await this.client.callTool({ name: WARM_UP_TOOL, arguments: {} }, { timeout: timeoutMs }).catch(() => {});
  }

  callTool(name: string, args: Record<string, unknown>, opts: { signal: AbortSignal; timeoutMs: number }): Promise<CallToolResult> {
    return this.client.callTool({ name, arguments: args }, { signal: opts.signal, timeout: opts.timeoutMs });
  }

  async stop(): Promise<void> {
    this.ended();
    await this.client.close().catch(() => {});
    await this.transport.close().catch(() => {});
  }
}

function variables(where: Placement): Record<Variable, string> {
  return {
    RFT_TRACE_ID: where.traceId ?? '',
    RFT_WORKSPACE: where.kind === 'sandbox' ? WORKSPACE_MOUNT : (where.workspace ?? ''),
  };
}

/** What a stdio server runs: its argv, working directory and environment, the variables expanded. */
function commandOf(server: McpServerSpec, vars: Record<Variable, string>): { argv: string[]; cwd: string | undefined; env: Record<string, string> } {
  return {
    argv: [server.command ?? '', ...server.args.map((a) => expand(a, vars))],
    env: Object.fromEntries(Object.entries(server.env).map(([k, v]) => [k, expand(v, vars)])),
    cwd: server.cwd !== undefined ? expand(server.cwd, vars) : undefined,
  };
}

/**
 * What a pooled sandbox may start ahead for a rollout server (SandboxSpec.prestarts): a stdio server
 * run inside the sandbox whose command names no rollout (no `${RFT_TRACE_ID}`), so the process it
 * starts is the one the rollout would have started. Null for any other server.
 */
export function prestartOf(server: McpServerSpec): PrestartSpec | null {
  if (server.scope !== 'rollout' || !server.sandbox || server.command === undefined || usesVariables(server, 'RFT_TRACE_ID')) return null;
  const { argv, env, cwd } = commandOf(server, { RFT_TRACE_ID: '', RFT_WORKSPACE: WORKSPACE_MOUNT });
  return { key: prestartKey(server), argv, env, ...(cwd !== undefined ? { cwd } : {}) };
}

export function prestartKey(server: McpServerSpec): string {
  return `mcp:${server.name}`;
}

async function spawnServer(server: McpServerSpec, where: Placement, vars: Record<Variable, string>): Promise<SandboxProcess> {
  const { argv, env, cwd } = commandOf(server, vars);
  if (where.kind === 'sandbox') return where.sandbox.spawn(argv, { ...(cwd !== undefined ? { cwd } : {}), env });
  const dir = cwd !== undefined ? (isAbsolute(cwd) ? cwd : resolve(where.baseDir, cwd)) : (where.workspace ?? where.baseDir);
  const proc = startProgram({ argv: withDeathSignal(argv), cwd: dir, env: { PATH: SANDBOX_PATH, ...where.inheritedEnv, ...env } });
  const drop = await recordHostProcess(where.records, proc.pid);
  void proc.exited.then(drop);
  return proc;
}

function describeEnd(t: ProcessTransport, cause: unknown): { how: string; stderr: string } {
  const exit = t.exit;
  const how = exit ? (exit.signal ? `was killed (${exit.signal})` : `exited with code ${exit.exitCode}`) : cause instanceof Error ? cause.message : 'stopped answering';
  return { how, stderr: t.stderr() };
}
