// mcp.json: the MCP servers to bridge as tools, in the `mcpServers` shape MCP clients already use
// (`command`/`args`/`env` for stdio, `url`/`headers` for Streamable HTTP), plus this server's own
// per-server options. Checked once at boot; any mistake stops the boot naming the server and field.
// Relative paths in it (a `command` with a `/`, `args` naming a file, `mounts`) resolve against
// mcp.json's folder, so a project's mcp.json moves with it. tools/*.py FastMCP files need no entry:
// pythonToolServers makes one per file.
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { DEFAULT_MCP_START_TIMEOUT_MS } from '../config.js';
import { errors } from '../errors.js';
import { formatZodIssues } from '../ledger/output.js';

/** The per-rollout variables; nothing else in `${...}` expands. */
export const VARIABLES = ['RFT_TRACE_ID', 'RFT_WORKSPACE'] as const;
export type Variable = (typeof VARIABLES)[number];

const stringMap = z.record(z.string(), z.string());

const serverSchema = z
  .strictObject({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    env: stringMap.default({}),
    /** Working directory: relative to the workspace when sandboxed, else a host path. */
    cwd: z.string().min(1).optional(),
    url: z.url().optional(),
    headers: stringMap.default({}),
    /** `rollout`: one instance per rollout (default); `shared`: one instance for the whole server. */
    scope: z.enum(['rollout', 'shared']).default('rollout'),
    /** Run the stdio server inside the rollout's sandbox (its workspace only, no network). */
    sandbox: z.boolean().default(false),
    /** Host directories the sandboxed server needs read-only (its install dir, a runtime); relative to mcp.json's folder. */
    mounts: z.array(z.string()).default([]),
    /** Prepended to every tool name this server offers. */
    prefix: z.string().regex(/^[A-Za-z0-9_-]{0,32}$/, 'letters, digits, _ and -, at most 32').default(''),
    /** Only these of the server's tools (its own names); all when absent. */
    tools: z.array(z.string().min(1)).optional(),
    cost: z.number().int().min(0).default(1),
    /** Run this server's calls one at a time per rollout, in arrival order (for servers that are not safe under parallel calls). */
    serial: z.boolean().default(false),
    timeoutMs: z.number().int().min(1).max(600_000).optional(),
    maxOutputBytes: z.number().int().min(64).optional(),
    /**
     * How long an instance may take to start (its process, then the answer to `initialize`); default
     * RFT_MCP_START_TIMEOUT_MS. Not the tool's time: past it a call answers RFT_ERR_TOOL_START_TIMEOUT.
     */
    startTimeoutMs: z.number().int().min(100).max(600_000).optional(),
  })
  .superRefine((s, ctx) => {
    const fail = (message: string) => ctx.addIssue({ code: 'custom', message });
    if ((s.command === undefined) === (s.url === undefined)) fail('give either "command" (a stdio server) or "url" (a Streamable HTTP server)');
    if (s.url !== undefined && (s.args.length || Object.keys(s.env).length || s.cwd !== undefined)) fail('"args", "env" and "cwd" are for stdio servers; an HTTP server takes "headers"');
    if (s.command !== undefined && Object.keys(s.headers).length) fail('"headers" are for HTTP servers');
    if (s.sandbox && s.command === undefined) fail('"sandbox": true runs a stdio server ("command") inside the rollout\'s sandbox');
    if (s.sandbox && s.scope !== 'rollout') fail('"sandbox": true runs the server inside each rollout\'s sandbox, so it needs "scope": "rollout"');
    if (s.mounts.length && !s.sandbox) fail('"mounts" are for sandboxed servers ("sandbox": true)');
  });

export type ServerConfig = z.output<typeof serverSchema>;

const fileSchema = z.strictObject({
  mcpServers: z.record(z.string(), serverSchema),
});

export interface McpServerSpec extends ServerConfig {
  name: string;
  /** Its own `startTimeoutMs`, else the server's default (RFT_MCP_START_TIMEOUT_MS). */
  startTimeoutMs: number;
  /** Where it was configured, for messages: `mcp.json: mcpServers.memory`. */
  source: string;
}

export interface McpConfig {
  file: string;
  servers: McpServerSpec[];
}

const VAR = /\$\{([^}]*)\}/g;

/** Every string a server's instances are started with (the places `${...}` may appear). */
function templates(s: ServerConfig): [string, string][] {
  return [
    ...s.args.map((a, i): [string, string] => [`args[${i}]`, a]),
    ...Object.entries(s.env).map(([k, v]): [string, string] => [`env.${k}`, v]),
    ...Object.entries(s.headers).map(([k, v]): [string, string] => [`headers.${k}`, v]),
    ...(s.url !== undefined ? [['url', s.url] as [string, string]] : []),
    ...(s.cwd !== undefined ? [['cwd', s.cwd] as [string, string]] : []),
  ];
}

/** Whether any of the server's strings names a per-rollout variable (or this one). */
export function usesVariables(s: ServerConfig, only?: Variable): boolean {
  return templates(s).some(([, v]) => [...v.matchAll(VAR)].some((m) => only === undefined || m[1] === only));
}

/** Replaces `${RFT_TRACE_ID}` and `${RFT_WORKSPACE}` (checked at load: no other name occurs). */
export function expand(value: string, vars: Record<Variable, string>): string {
  return value.replace(VAR, (_, name: Variable) => vars[name]);
}

/**
 * Loads and checks mcp.json; null when the file is absent and was not asked for. `startTimeoutMs`:
 * the start bound of a server whose entry sets none (RFT_MCP_START_TIMEOUT_MS).
 */
export function loadMcpConfig(path: string, required: boolean, startTimeoutMs = DEFAULT_MCP_START_TIMEOUT_MS): McpConfig | null {
  if (!existsSync(path)) {
    if (required) throw errors.mcpConfig(path, 'no such file (RFT_MCP_CONFIG names it)');
    return null;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw errors.mcpConfig(path, `not valid JSON: ${(e as Error).message}`);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) throw errors.mcpConfig(path, formatZodIssues(parsed.error.issues));
  const servers: McpServerSpec[] = [];
  for (const [name, s] of Object.entries(parsed.data.mcpServers)) {
    const source = `${path}: mcpServers.${name}`;
    const fail = (why: string) => errors.mcpConfig(path, `mcpServers.${name}: ${why}`);
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw fail('server names are 1 to 64 letters, digits, _ and -');
    for (const [where, value] of templates(s)) {
      for (const m of value.matchAll(VAR)) {
        const v = m[1] ?? '';
        if (!(VARIABLES as readonly string[]).includes(v)) throw fail(`${where}: unknown variable \${${v}} (only ${VARIABLES.map((x) => `\${${x}}`).join(' and ')} expand)`);
        if (s.scope === 'shared') throw fail(`${where}: \${${v}} is per rollout, and this server is shared ("scope": "shared")`);
      }
    }
    const dir = dirname(resolve(path));
    const mounts = s.mounts.map((m) => resolve(dir, m));
    for (const m of mounts) if (!existsSync(m) || !statSync(m).isDirectory()) throw fail(`mount ${m} is not a directory`);
    const paths = s.command === undefined ? {} : { command: hostPath(dir, s.command, true), args: s.args.map((a) => hostPath(dir, a, false)) };
    servers.push({ ...s, ...paths, mounts, name, source, startTimeoutMs: s.startTimeoutMs ?? startTimeoutMs });
  }
  return { file: path, servers };
}

/**
 * A relative path of mcp.json, resolved against its folder: a command with a `/` in it
 * (`.venv/bin/python`), an argument starting `./` or `../`, or naming a file or folder that is there
 * (`tools/server.py`). Anything else (`python3`, `-m`, `${RFT_WORKSPACE}/x`) is left as written.
 */
function hostPath(dir: string, value: string, isCommand: boolean): string {
  if (isAbsolute(value) || value.includes('${') || value.startsWith('-')) return value;
  if (isCommand) return value.includes('/') ? resolve(dir, value) : value;
  return /^\.\.?\//.test(value) || existsSync(resolve(dir, value)) ? resolve(dir, value) : value;
}

/** The Python that runs tools/*.py: the project's `.venv` when it has one, else the system's python3. */
export const SYSTEM_PYTHON = 'python3';

/**
 * One rollout server per tools/*.py file (a FastMCP server, run as `python FILE`), as the entry an
 * mcp.json would have: the project's Python (ROOT/.venv, its real path, else python3), inside each
 * rollout's sandbox, with the venv and tools/ mounted read-only (never the project folder, which
 * holds data/). A file an mcp.json server already runs (a project init'ed before this) is left to it.
 * The start bound is at least 60 s: importing FastMCP takes seconds on a busy machine.
 */
export function pythonToolServers(files: readonly string[], root: string, config: McpConfig | null, startTimeoutMs = DEFAULT_MCP_START_TIMEOUT_MS): McpServerSpec[] {
  const taken = new Set((config?.servers ?? []).flatMap((s) => (s.command === undefined ? [] : s.args)));
  const names = new Set((config?.servers ?? []).map((s) => s.name));
  const venv = resolve(root, '.venv');
  const venvDir = existsSync(resolve(venv, 'bin/python')) ? realpathSync(venv) : undefined;
  const out: McpServerSpec[] = [];
  for (const file of files) {
    if (taken.has(file)) continue;
    const name = basename(file, '.py');
    if (names.has(name)) throw errors.mcpConfig(config?.file ?? file, `mcpServers.${name}: the same name as the Python tools file ${file}; rename one`);
    const entry = serverSchema.parse({
      command: venvDir ? resolve(venvDir, 'bin/python') : SYSTEM_PYTHON,
      args: [file],
      env: { PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' },
      sandbox: true,
      mounts: [...(venvDir ? [venvDir] : []), dirname(file)],
    });
    out.push({ ...entry, name, source: file, startTimeoutMs: Math.max(startTimeoutMs, 60_000) });
  }
  return out;
}

/** mcp.json's servers (if any) and those of the tools/*.py files; null when there are neither. */
export function withPythonTools(config: McpConfig | null, files: readonly string[], root: string, startTimeoutMs?: number): McpConfig | null {
  const extra = pythonToolServers(files, root, config, startTimeoutMs);
  if (extra.length === 0) return config;
  return { file: config?.file ?? dirname(extra[0]!.source), servers: [...(config?.servers ?? []), ...extra] };
}
