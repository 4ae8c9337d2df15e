// The MCP server every /mcp exchange is answered by: `tools/list` lists the registry (native and
// bridged tools), `tools/call` runs the tool through the ledger, exactly as POST /tools does. One
// definition serves both protocol generations: a fresh instance per request (2026-07-28, stateless
// 2025 clients) or one per session (2025 clients with sessions).
import { createHash } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode, Server, type CallToolResult, type ServerContext } from '@modelcontextprotocol/server';
import { errors, isRftError } from '../../errors.js';
import type { Ledger, ToolCallOutcome } from '../../ledger/ledger.js';
import { canonicalJson } from '../../protocol/canonical.js';
import { timeOrderedId } from '../../rollout/ids.js';
import { ID_MAX_LENGTH, isId, traceIdSchema, type Item } from '../../protocol/wire.js';
import type { Registry } from '../../registry/loader.js';

/** Header naming the rollout a call belongs to (the trainer's `trace_id`). */
export const TRACE_HEADER = 'x-rft-trace-id';
/** `_meta` keys this server reads on `tools/call` and writes on its result. */
export const META = {
  idempotencyKey: 'rft-endpoints/idempotency-key',
  item: 'rft-endpoints/item',
  traceId: 'rft-endpoints/trace-id',
  callId: 'rft-endpoints/call-id',
  replayed: 'rft-endpoints/replayed',
} as const;

/** The rollout of an MCP session: its trace id (ended with the session). */
export function sessionTraceId(sessionId: string): string {
  return `mcp-session-${sessionId}`;
}

const ID_RULES = `must be a string of 1 to ${ID_MAX_LENGTH} characters without control characters or unpaired surrogates (a call_id's rules)`;

const SERVER_INFO = { name: 'rft-endpoints', version: '1' };

export interface McpServerDeps {
  registry: Registry;
  ledger: Ledger;
  /** A door's /mcp: every request names its rollout, whose tools alone are listed and callable. */
  rollouts?: RolloutScope;
}

/** How a door scopes an MCP request to one of its rollouts (the NeMo Gym door: its session token header). */
export interface RolloutScope {
  /** The tools tools/list shows the request: its rollout's (none when it names none). */
  list(ctx: ServerContext): ReadonlySet<string> | Promise<ReadonlySet<string>>;
  /** The request's rollout; a missing or lost one throws its coded RftError. */
  resolve(ctx: ServerContext): ScopedRollout | Promise<ScopedRollout>;
}

export interface ScopedRollout {
  traceId: string;
  tools: ReadonlySet<string>;
  call(key: string, name: string, args: unknown): Promise<ToolCallOutcome>;
}

function protocolError(e: unknown): ProtocolError {
  if (!isRftError(e)) return new ProtocolError(ProtocolErrorCode.InternalError, 'internal error');
  const code = e.statusCode >= 500 ? ProtocolErrorCode.InternalError : ProtocolErrorCode.InvalidParams;
  return new ProtocolError(code, e.message, { code: e.code, status: e.statusCode, retryable: e.statusCode >= 500, ...(e.details ?? {}) });
}

/** Where a call belongs: the header's rollout, else the session's, else a trace of its own. */
function scope(ctx: ServerContext): { traceId: string; stateless: boolean; callPrefix: string } {
  const header = ctx.http?.req?.headers.get(TRACE_HEADER) ?? null;
  if (header !== null) {
    const t = traceIdSchema.safeParse(header);
    if (!t.success) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `${TRACE_HEADER} must be 1 to 200 characters`);
    return { traceId: t.data, stateless: false, callPrefix: ctx.sessionId !== undefined ? `mcp:${ctx.sessionId}:` : 'mcp:' };
  }
  if (ctx.sessionId !== undefined) return { traceId: sessionTraceId(ctx.sessionId), stateless: false, callPrefix: 'mcp:' };
  return { traceId: timeOrderedId('mcp-call-'), stateless: true, callPrefix: 'mcp:' };
}

function unknownTool(name: string, offered: Iterable<string>): ProtocolError {
  const e = errors.unknownTool(name, [...offered]);
  return new ProtocolError(ProtocolErrorCode.InvalidParams, e.message, { code: e.code, ...e.details });
}

/**
 * A door's rollout-scoped call. Its exactly-once key is the idempotency key, else the request id
 * with the call's own hash: Gym's clients may open a fresh MCP session per call, whose request ids
 * restart, so the id alone would answer a new call with another call's result.
 */
async function rolloutCall(rollouts: RolloutScope, ctx: ServerContext, name: string, args: unknown, key: string | undefined): Promise<CallToolResult> {
  let r;
  try {
    r = await rollouts.resolve(ctx);
  } catch (e) {
    throw protocolError(e);
  }
  if (!r.tools.has(name)) throw unknownTool(name, r.tools);
  const callId = key ?? `mcp:${String(ctx.mcpReq.id)}:${createHash('sha256').update(name).update('\0').update(canonicalJson(args ?? {})).digest('base64url').slice(0, 22)}`;
  if (!isId(callId)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `the call id made of the request id ${ID_RULES}: send a plain request id or _meta["${META.idempotencyKey}"]`);
  let outcome;
  try {
    outcome = await r.call(callId, name, args ?? {});
  } catch (e) {
    throw protocolError(e);
  }
  return {
    content: [{ type: 'text', text: outcome.output }],
    isError: outcome.status !== 'ok',
    _meta: { [META.traceId]: r.traceId, [META.callId]: callId, [META.replayed]: outcome.replayed },
  };
}

export function createToolServer(deps: McpServerDeps): Server {
  const { registry, ledger, rollouts } = deps;
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} } });

  server.setRequestHandler('tools/list', async (_request, ctx) => {
    const shown = await rollouts?.list(ctx);
    return {
      tools: [...registry.tools.values()]
        .filter((t) => !shown || shown.has(t.def.name))
        .map((t) => ({ name: t.def.name, description: t.def.description, inputSchema: t.parameters as { type: 'object' } })),
    };
  });

  server.setRequestHandler('tools/call', async (request, ctx): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    const meta = (request.params._meta ?? {}) as Record<string, unknown>;
    const key = meta[META.idempotencyKey];
    // The key (or the request id below) becomes the call's call_id: the rules of POST /tools' call_id.
    if (key !== undefined && !isId(key)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `_meta["${META.idempotencyKey}"] ${ID_RULES}`);
    if (rollouts) return rolloutCall(rollouts, ctx, name, args, key);
    const tool = registry.tools.get(name);
    if (!tool) throw unknownTool(name, registry.tools.keys());
    const rawItem = meta[META.item];
    if (rawItem !== undefined && (typeof rawItem !== 'object' || rawItem === null || Array.isArray(rawItem))) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `_meta["${META.item}"] must be an object (the dataset row)`);
    }
    const { traceId, stateless, callPrefix } = scope(ctx);
    // A retry runs once: the client's idempotency key is the call id; without one, within a
    // rollout, the JSON-RPC request id is (a stateless call has nothing to match a retry against).
    const callId = key ?? (stateless ? timeOrderedId('mcp:') : `${callPrefix}${String(ctx.mcpReq.id)}`);
    if (!isId(callId)) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `the call id made of the request id, "${callPrefix}<id>", ${ID_RULES}: send a plain request id or _meta["${META.idempotencyKey}"]`);
    }
    let outcome;
    try {
      outcome = await ledger.call(tool, {
        traceId,
        callId,
        arguments: args ?? {},
        item: (rawItem as Item | undefined) ?? {},
        credential: ctx.http?.authInfo?.clientId ?? null,
        stateless,
      });
    } catch (e) {
      throw protocolError(e);
    }
    return {
      content: [{ type: 'text', text: outcome.output }],
      isError: outcome.status !== 'ok',
      _meta: { [META.traceId]: traceId, [META.callId]: callId, [META.replayed]: outcome.replayed },
    };
  });
  return server;
}
