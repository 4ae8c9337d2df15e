// Bridges the MCP servers of mcp.json into tools. At boot each server is started once, its tools are
// listed and registered like native tools (so /v1/tools, /v1/job-config and /mcp show them, and every
// call goes through the ledger: exactly once, budgeted, recorded). A `rollout` server then runs one
// instance per rollout: started on the rollout's first call to it (or with its sandbox, when a door
// announces the rollout: warmRollout), shared by that rollout's calls,
// stopped (process tree killed) when the rollout's sandbox ends, which is what gives it the
// sandboxes' cap, admission queue, grace, TTL and DELETE. A `shared` server keeps one instance.
import { createHash } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Tool } from '@modelcontextprotocol/client';
import { errors } from '../errors.js';
import { serverWork } from '../ledger/ledger.js';
import { cutOutput } from '../ledger/output.js';
import type { SandboxProvider } from '../sandbox/provider.js';
import type { ToolContext, ToolDefinition } from '../registry/define.js';
import type { LoadedTool, Registry } from '../registry/loader.js';
import type { PrestartSpec, Sandbox, SandboxProcess } from '../sandbox/types.js';
import type { McpConfig, McpServerSpec } from './config.js';
import { reapHostProcesses } from './host-processes.js';
import { McpInstance, prestartKey, prestartOf, type Placement } from './instance.js';
import { resultText } from './results.js';
import { CUT_META } from './stdio-transport.js';

/** How much later than the tool's timeout the MCP SDK's own request timeout fires (a backstop). */
const SDK_TIMEOUT_SLACK_MS = 1_000;

/**
 * A stdio server's messages are kept whole up to this many times its tools' output cap, and at
 * least MIN_READ_LIMIT (room for JSON escapes, structured content repeating the text, tools/list).
 * A bigger answer streams past unkept: the model reads its head, cut like any output.
 */
const READ_LIMIT_FACTOR = 4;
const MIN_READ_LIMIT = 1024 * 1024;

export function readLimit(maxOutputBytes: number): number {
  return Math.max(MIN_READ_LIMIT, READ_LIMIT_FACTOR * maxOutputBytes);
}

export interface BridgeOptions {
  sandboxes: SandboxProvider | undefined;
  log: Logger;
  /** Environment host stdio servers inherit (from config.ts: PATH, HOME, ...). */
  inheritedEnv: Record<string, string>;
  /** Root of the private directories of host instances (`${RFT_WORKSPACE}` when not sandboxed). */
  workRoot: string;
  defaultTimeoutMs: number;
  /** RFT_MAX_OUTPUT_BYTES: a server's tools' output cap when mcp.json sets none. */
  defaultMaxOutputBytes: number;
}

/** Records of the host instances running now (inside the work root: removed with it on a clean stop). */
const hostRecords = (workRoot: string): string => join(workRoot, '.processes');

/** Arguments reach the MCP server as sent (it validates them against its own schema): only "an object" is checked here. */
const ANY_OBJECT = z.record(z.string(), z.unknown());

interface RolloutEntry {
  sandbox: Sandbox;
  instance: Promise<McpInstance>;
  workspace: string | null;
  /** Started with the sandbox, before any call: a failed start is retried by the call, not shown to it. */
  ahead: boolean;
}

/** What the ledger puts before a tool error's message. */
const ERROR_PREFIX = 'Error: ';

function cutOf(result: { _meta?: Record<string, unknown> | undefined }): { bytes: number } | null {
  const cut = result._meta?.[CUT_META] as { bytes?: unknown } | undefined;
  return typeof cut?.bytes === 'number' ? { bytes: cut.bytes } : null;
}

/** A server's kind in the memory budget (src/sandbox/manager/memory.ts). */
const memoryKind = (s: McpServerSpec): string => `mcp:${s.name}`;

/** Never rejects: null where the sandbox cannot tell. */
const sandboxMemory = (sb: Sandbox): Promise<number | null> => (sb.memoryBytes?.() ?? Promise.resolve(null)).catch(() => null);

/** Tool names the trainer accepts; other characters of an MCP tool name become `_`. */
export function bridgedName(prefix: string, mcpName: string): string {
  return prefix + mcpName.replace(/[^A-Za-z0-9_-]/g, '_');
}

export class McpBridge {
  readonly tools: LoadedTool[] = [];
  private readonly shared = new Map<string, Promise<McpInstance>>();
  private readonly rollouts = new Map<string, Map<string, RolloutEntry>>();
  /** Instances running now (started, not yet exited or stopped). */
  private readonly running = new Set<McpInstance>();
  /** Each server's bridged tool names (what a rollout offers decides which instances it starts ahead). */
  private readonly toolsOf = new Map<string, string[]>();
  private closed = false;
  /** Rollout instances taken over from the warm pool's sandboxes (started there before the rollout). */
  private adopted = 0;

  private constructor(
    private readonly config: McpConfig,
    private readonly o: BridgeOptions,
  ) {}

  /** Host directories sandboxed servers need inside every sandbox (see SandboxSpec.readOnlyMounts). */
  static readOnlyMounts(config: McpConfig | null): string[] {
    return [...new Set((config?.servers ?? []).flatMap((s) => s.mounts))];
  }

  /**
   * The rollout servers the warm pool's sandboxes start ahead (SandboxSpec.prestarts): stdio servers
   * inside the sandbox whose command names no rollout. A rollout that takes such a sandbox adopts the
   * running process (startEntry), so its first call costs the MCP handshake, not the server's start.
   */
  static prestarts(config: McpConfig | null, defaultMaxOutputBytes: number): PrestartSpec[] {
    return (config?.servers ?? []).flatMap((s) => {
      const p = prestartOf(s);
      // The handshake too, in the pool, and one warm-up call: the instance is handed over connected, its call path compiled.
      const ready = async (proc: SandboxProcess): Promise<McpInstance> => {
        const instance = await McpInstance.adopt(s, proc, readLimit(s.maxOutputBytes ?? defaultMaxOutputBytes));
        await instance.warm(s.startTimeoutMs);
        return instance;
      };
      return p ? [{ ...p, ready }] : [];
    });
  }

  /** Starts each server once, lists its tools, builds them; a server that cannot start stops the boot. */
  static async start(config: McpConfig, o: BridgeOptions): Promise<McpBridge> {
    const bridge = new McpBridge(config, o);
    // Every rollout's sandbox holds room for one instance of each rollout server (its session may start each).
    for (const s of config.servers) if (s.scope === 'rollout') o.sandboxes?.memory?.perRollout(memoryKind(s));
    try {
      // What a crashed predecessor left: its host instances' processes, then their directories.
      const reaped = await reapHostProcesses(hostRecords(o.workRoot));
      if (reaped > 0) o.log.info({ reaped }, 'reaped host MCP instances left by a previous run');
      await rm(o.workRoot, { recursive: true, force: true });
      const listed = await Promise.all(config.servers.map((s) => bridge.probe(s)));
      config.servers.forEach((s, i) => bridge.addTools(s, listed[i] ?? []));
    } catch (e) {
      await bridge.close();
      throw e;
    }
    return bridge;
  }

  /** Adds the bridged tools to the registry; a name already taken stops the boot naming both. */
  register(registry: Registry): void {
    for (const t of this.tools) {
      const prev = registry.tools.get(t.def.name);
      if (prev) throw errors.unitDuplicate('tool', t.def.name, [prev.file, t.file]);
      registry.tools.set(t.def.name, t);
    }
  }

  /** The rollout ended (its sandbox is gone): its instances go, process trees and directories too. */
  endRollout(traceId: string): void {
    const byServer = this.rollouts.get(traceId);
    if (!byServer) return;
    this.rollouts.delete(traceId);
    for (const entry of byServer.values()) void this.stopEntry(entry);
  }

  /** What /readyz reports: servers bridged, instances running now, and how many rollouts' instances were started in the warm pool. */
  stats(): { servers: number; tools: number; instances: number; prestarted: number } {
    return { servers: this.config.servers.length, tools: this.tools.length, instances: this.running.size, prestarted: this.adopted };
  }

  /** The rollout servers with an instance (running or starting) for this rollout. */
  rolloutServers(traceId: string): string[] {
    return [...(this.rollouts.get(traceId)?.keys() ?? [])];
  }

  /** Starts an instance and keeps count of it while it runs; its memory is measured once it answers (not awaited). */
  private async launch(s: McpServerSpec, where: Placement): Promise<McpInstance> {
    const memory = this.o.sandboxes?.memory;
    // Not every start is measured (memory.ts); a shared instance's always is, it is held while it runs.
    const due = !!memory && (s.scope === 'shared' || memory.due(memoryKind(s)));
    const before = due && where.kind === 'sandbox' ? sandboxMemory(where.sandbox) : null;
    const instance = this.track(await McpInstance.start(s, where, readLimit(this.maxOutputBytes(s))));
    if (due) void this.measure(s, instance, where.kind === 'sandbox' ? where.sandbox : null, before).catch(() => {});
    return instance;
  }

  /**
   * One instance's memory, for the budget (src/sandbox/manager/memory.ts): its process tree's on the
   * host; inside a sandbox, what the sandbox grew by since before it started. A shared instance's is
   * held outside every rollout while it runs.
   */
  private async measure(s: McpServerSpec, instance: McpInstance, sandbox: Sandbox | null, before: Promise<number | null> | null): Promise<number | null> {
    const memory = this.o.sandboxes?.memory;
    if (!memory) return null;
    const [from, own] = await Promise.all([before, instance.memoryBytes()]);
    const to = sandbox && from !== null ? await sandboxMemory(sandbox) : null;
    const bytes = own ?? (to !== null && from !== null ? to - from : null);
    if (bytes === null || !(bytes > 0)) return null;
    memory.record(memoryKind(s), bytes);
    if (s.scope === 'shared' && instance.alive) {
      const key = memoryKind(s);
      this.o.sandboxes?.holdOutside?.(key, bytes);
      instance.onEnd(() => this.o.sandboxes?.holdOutside?.(key, 0));
    }
    return bytes;
  }

  private track(instance: McpInstance): McpInstance {
    this.running.add(instance);
    instance.onEnd(() => this.running.delete(instance));
    return instance;
  }

  private maxOutputBytes(s: McpServerSpec): number {
    return s.maxOutputBytes ?? this.o.defaultMaxOutputBytes;
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.rollouts.values()].flatMap((m) => [...m.values()]);
    this.rollouts.clear();
    const shared = [...this.shared.values()];
    this.shared.clear();
    await Promise.all([...all.map((e) => this.stopEntry(e)), ...shared.map((p) => p.then((i) => i.stop(), () => {}))]);
    await rm(this.o.workRoot, { recursive: true, force: true }).catch(() => {});
  }

  /** One instance at boot: its tools. A shared server's instance is kept; a rollout's probe is stopped. */
  private async probe(s: McpServerSpec): Promise<Tool[]> {
    if (s.scope === 'shared') {
      const instance = this.startShared(s);
      return (await instance).listTools();
    }
    if (!this.o.sandboxes) {
      throw errors.mcpConfig(this.config.file, `mcpServers.${s.name}: "scope": "rollout" ties each instance to its rollout's sandbox, and sandboxes are off (RFT_SANDBOX=none); enable them or use "scope": "shared"`);
    }
    const traceId = `mcp-boot-${s.name}`;
    const sandbox = s.sandbox ? await this.o.sandboxes.createEphemeral({ traceId }) : null;
    const workspace = sandbox ? null : this.privateDir(s, traceId);
    if (workspace) await mkdir(workspace, { recursive: true, mode: 0o700 });
    try {
      const instance = await this.launch(s, this.placement(s, traceId, sandbox, workspace));
      try {
        return await instance.listTools();
      } finally {
        await instance.stop();
      }
    } finally {
      await sandbox?.destroy();
      if (workspace) await rm(workspace, { recursive: true, force: true });
    }
  }

  private addTools(s: McpServerSpec, listed: Tool[]): void {
    const offered = new Map(listed.map((t) => [t.name, t]));
    for (const name of s.tools ?? []) {
      if (!offered.has(name)) throw errors.mcpConfig(this.config.file, `mcpServers.${s.name}.tools: the server has no tool "${name}"; it offers ${[...offered.keys()].join(', ') || 'none'}`);
    }
    const seen = new Map<string, string>();
    for (const t of listed) {
      if (s.tools && !s.tools.includes(t.name)) continue;
      const name = bridgedName(s.prefix, t.name);
      if (name.length > 64) throw errors.mcpConfig(this.config.file, `mcpServers.${s.name}: tool "${t.name}" becomes "${name}", longer than the 64 characters a tool name may have; leave it out with "tools"`);
      const other = seen.get(name);
      if (other !== undefined) throw errors.unitDuplicate('tool', name, [`${s.source} (tool "${other}")`, `${s.source} (tool "${t.name}")`]);
      seen.set(name, t.name);
      this.toolsOf.set(s.name, [...(this.toolsOf.get(s.name) ?? []), name]);
      const { $schema: _ignored, ...parameters } = t.inputSchema as Record<string, unknown>;
      const def: ToolDefinition = {
        name,
        description: t.description ?? t.title ?? `${t.name} (MCP server "${s.name}")`,
        parameters: ANY_OBJECT,
        cost: s.cost,
        ...(s.serial ? { serial: true } : {}),
        ...(s.timeoutMs !== undefined ? { timeoutMs: s.timeoutMs } : {}),
        ...(s.maxOutputBytes !== undefined ? { maxOutputBytes: s.maxOutputBytes } : {}),
        handler: (args, ctx) => this.call(s, t.name, args as Record<string, unknown>, ctx),
      };
      this.tools.push({ def, file: `${s.source} (tool "${t.name}")`, parameters });
    }
  }

  private async call(s: McpServerSpec, tool: string, args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
    // Starting the instance is ours, like creating the sandbox: its time is not the tool's
    // (serverWork), and a start past `startTimeoutMs` is a 503 the ledger does not charge.
    if (s.scope === 'shared') return this.callOn(await serverWork(ctx, this.sharedInstance(s)), tool, args, ctx);
    // Every rollout instance belongs to its rollout's sandbox (whether it runs inside it or not): a
    // call without a rollout is refused here with a tool error saying what to send, and the call
    // counts as the sandbox's activity, so its inactivity TTL cannot end the instance under it.
    const sandbox = await ctx.sandbox();
    return sandbox.hold(async () => this.callOn(await serverWork(ctx, this.rolloutInstance(s, ctx, sandbox)), tool, args, ctx));
  }

  private async callOn(instance: McpInstance, tool: string, args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
    const s = instance.server;
    let result;
    try {
      // The ledger's timeout (the same length, started first, not counting a wait for the sandbox or
      // the instance's start) is the one that answers; the SDK's own, a second later, is only a backstop.
      result = await instance.callTool(tool, args, { signal: ctx.signal, timeoutMs: (s.timeoutMs ?? this.o.defaultTimeoutMs) + SDK_TIMEOUT_SLACK_MS });
    } catch (e) {
      if (ctx.signal.aborted) throw e; // the ledger answers the timeout (or the shutdown)
      if (!instance.alive) {
        // Its sandbox ended under it (lost, or taken down by the rollout): that answers, not its end.
        if (instance.lost) throw instance.lost;
        const end = instance.describeEnd(e);
        ctx.log.warn({ server: s.name, ...end }, 'MCP server instance ended during a call');
        throw new Error(`MCP server "${s.name}" ${end.how} during this call; it is restarted on the next call.${end.stderr ? ` Its stderr ends with:\n${end.stderr}` : ''}`);
      }
      // The server refused the request (unknown tool, invalid params): the model reads why.
      throw new Error(`MCP server "${s.name}": ${(e as Error).message}`);
    }
    const { text: whole, isError } = resultText(result);
    // An answer past the read limit (stdio-transport.ts): its head, cut here with the size it had,
    // as the ledger cuts any output past the cap (the ledger's own cut would state the head's size).
    const cut = cutOf(result);
    const text = cut ? cutOutput(whole, this.maxOutputBytes(s) - (isError ? ERROR_PREFIX.length : 0), cut.bytes) : whole;
    if (isError) throw new Error(text.replace(/^error:\s*/i, '') || 'the tool reported an error without a message');
    return text;
  }

  private startShared(s: McpServerSpec): Promise<McpInstance> {
    const p = this.launch(s, this.placement(s, null, null, null));
    this.shared.set(s.name, p);
    p.catch(() => {
      if (this.shared.get(s.name) === p) this.shared.delete(s.name);
    });
    return p;
  }

  /** The shared instance, restarted when it has died. */
  private async sharedInstance(s: McpServerSpec): Promise<McpInstance> {
    if (this.closed) throw errors.mcpStart(s.name, 'the server is shutting down');
    const current = this.shared.get(s.name);
    const instance = await (current ?? this.startShared(s));
    if (instance.alive) return instance;
    if (this.shared.get(s.name) === current) this.startShared(s);
    return this.sharedInstance(s);
  }

  /**
   * The rollout's instance of `s`, started on the rollout's first call (parallel first calls share
   * it), replaced when it died or when the rollout's sandbox is a new one.
   */
  private async rolloutInstance(s: McpServerSpec, ctx: ToolContext, sandbox: Sandbox): Promise<McpInstance> {
    for (let attempt = 0; attempt < 2; attempt++) {
      if (this.closed) throw errors.mcpStart(s.name, 'the server is shutting down');
      const entry = this.entryOf(s, ctx.traceId, sandbox, false);
      let instance: McpInstance;
      try {
        instance = await entry.instance;
      } catch (e) {
        if (!entry.ahead) throw e;
        continue; // the start ahead failed (and its entry is gone): this call starts its own
      }
      if (instance.alive) return instance;
      // It died since its last call: this call gets a fresh one.
      ctx.log.warn({ server: s.name, ...instance.describeEnd() }, 'MCP server instance had ended; restarting it');
      const byServer = this.rollouts.get(ctx.traceId);
      if (byServer?.get(s.name) === entry) byServer.delete(s.name);
      void this.stopEntry(entry);
    }
    throw errors.mcpStart(s.name, 'it exits as soon as it starts');
  }

  /**
   * The rollout's sandbox is there before its first call (a door that announces rollouts): the
   * instances of the rollout servers whose tools it offers start now, as the entries its first calls
   * then use, so a first call costs a round trip, not a server start. Not awaited: a failed start is
   * logged and left to the first call, which starts the instance as it would have. Called as the
   * sandbox is handed over, so before the end of that sandbox reaches endRollout (the manager tells
   * its listeners once the sandbox is destroyed): what starts here is stopped with it.
   */
  warmRollout(traceId: string, tools: ReadonlySet<string>, sandbox: Sandbox): void {
    if (this.closed) return;
    for (const s of this.config.servers) {
      if (s.scope !== 'rollout' || !(this.toolsOf.get(s.name) ?? []).some((t) => tools.has(t))) continue;
      const entry = this.entryOf(s, traceId, sandbox, true);
      // A call may have started it already: that start's failure is the call's to report.
      if (entry.ahead) entry.instance.catch((e: unknown) => this.o.log.warn({ err: e, server: s.name, trace_id: traceId }, 'MCP server instance started ahead failed'));
    }
  }

  /** The rollout's entry of `s` for this sandbox, started unless there is one (any instance it has, alive or not). */
  private entryOf(s: McpServerSpec, traceId: string, sandbox: Sandbox, ahead: boolean): RolloutEntry {
    let byServer = this.rollouts.get(traceId);
    if (!byServer) this.rollouts.set(traceId, (byServer = new Map()));
    const entry = byServer.get(s.name);
    if (entry && entry.sandbox === sandbox) return entry;
    if (entry) void this.stopEntry(entry);
    const started = this.startEntry(s, traceId, sandbox, ahead);
    byServer.set(s.name, started);
    const map = byServer;
    started.instance.catch(() => {
      if (map.get(s.name) === started) map.delete(s.name);
    });
    return started;
  }

  private startEntry(s: McpServerSpec, traceId: string, sandbox: Sandbox, ahead: boolean): RolloutEntry {
    const workspace = s.sandbox ? null : this.privateDir(s, traceId);
    const instance = (async () => {
      if (workspace) await mkdir(workspace, { recursive: true, mode: 0o700 });
      const prestarted = s.sandbox ? sandbox.claimPrestarted?.(prestartKey(s)) : null;
      if (prestarted) {
        const instance = prestarted.ready;
        if (instance instanceof McpInstance && instance.alive) {
          this.adopted++;
          return this.track(instance);
        }
        // It ended in the pool since its handshake: the rollout gets a fresh one.
        await prestarted.process.kill();
      }
      return this.launch(s, this.placement(s, traceId, s.sandbox ? sandbox : null, workspace));
    })();
    return { sandbox, instance, workspace, ahead };
  }

  private async stopEntry(e: RolloutEntry): Promise<void> {
    await e.instance.then((i) => i.stop(), () => {});
    if (e.workspace) await rm(e.workspace, { recursive: true, force: true }).catch(() => {});
  }

  /** `${RFT_WORKSPACE}` of a host instance: a directory of its own, removed when it stops. */
  private privateDir(s: McpServerSpec, traceId: string): string {
    return join(this.o.workRoot, `${s.name}-${createHash('sha256').update(traceId).digest('hex').slice(0, 16)}`);
  }

  private placement(s: McpServerSpec, traceId: string | null, sandbox: Sandbox | null, workspace: string | null): Placement {
    if (sandbox) return { kind: 'sandbox', sandbox, traceId: traceId ?? '' };
    return { kind: 'host', traceId, workspace, inheritedEnv: this.o.inheritedEnv, baseDir: dirname(this.config.file), records: hostRecords(this.o.workRoot) };
  }
}

