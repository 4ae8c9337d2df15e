// /mcp: the tools over MCP's Streamable HTTP transport, behind the same credentials, rate limit and
// ledger as POST /tools. Both protocol generations are served: 2026-07-28 requests (no sessions)
// by the SDK's per-request handler; 2025 clients get a session when they initialize one (their
// rollout unless they name another), or stateless serving when they do not.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  legacyStatelessFallback,
  WebStandardStreamableHTTPServerTransport,
  type AuthInfo,
  type Server,
} from '@modelcontextprotocol/server';
import { createToolServer, sessionTraceId } from './server.js';

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  lastUsed: number;
  /** Requests being answered: a session never expires under a call. */
  inflight: number;
}

/** Live 2025 sessions at most; past it the least recently used idle one is ended (its client gets a 404 and starts another). */
const MAX_SESSIONS = 10_000;

function toWebRequest(req: FastifyRequest, signal: AbortSignal, rawBody: Buffer | undefined = req.rawBody): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
  }
  const hasBody = req.method === 'POST' && rawBody !== undefined;
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, {
    method: req.method,
    headers,
    signal,
    ...(hasBody ? { body: new Uint8Array(rawBody) } : {}),
  });
}

async function send(reply: FastifyReply, res: Response): Promise<void> {
  void reply.code(res.status);
  res.headers.forEach((value, key) => void reply.header(key, value));
  if (!res.body) return reply.send();
  return reply.send(Readable.fromWeb(res.body as unknown as NodeReadableStream));
}

/**
 * /mcp on a door's listener: stateless (no MCP sessions: the door's own token names the rollout),
 * 2025 clients answered in plain JSON as Gym's own exposure answers (json_response, stateless).
 * One fresh server per request, so nothing outlives it; `close` ends the 2026 handler.
 */
export function doorMcp(factory: () => Server, maxRequestBodySize: number) {
  const modern = createMcpHandler(factory, { legacy: 'reject', maxRequestBodySize });
  async function legacy(web: Request, parsedBody: unknown): Promise<Response> {
    if (web.method !== 'POST') return Response.json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }, { status: 405 });
    const server = factory();
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true, maxRequestBodySize });
    await server.connect(transport);
    try {
      return await transport.handleRequest(web, { parsedBody });
    } finally {
      void transport.close().catch(() => {});
      void server.close().catch(() => {});
    }
  }
  return {
    async handle(req: FastifyRequest, reply: FastifyReply, body: Buffer, parsedBody: unknown): Promise<void> {
      const ac = new AbortController();
      reply.raw.once('close', () => ac.abort());
      const web = toWebRequest(req, ac.signal, body);
      const isLegacy = req.method !== 'POST' || (await isLegacyRequest(web, parsedBody));
      await send(reply, isLegacy ? await legacy(web, parsedBody) : await modern.fetch(web, { parsedBody }));
    },
    close: () => modern.close(),
  };
}

export default async function mcpRoutes(app: FastifyInstance): Promise<void> {
  const { registry, ledger, sandboxes, config } = app.rft;
  const deps = { registry, ledger };
  const factory = () => createToolServer(deps);
  const modern = createMcpHandler(factory, { legacy: 'reject', maxRequestBodySize: config.bodyLimitBytes });
  const stateless = legacyStatelessFallback(factory, undefined, { maxRequestBodySize: config.bodyLimitBytes });
  const sessions = new Map<string, Session>();

  // A session is its rollout: when it ends (DELETE, expiry), so does the rollout's sandbox, and
  // with it the rollout's bridged server instances.
  const endSession = (id: string): void => {
    if (!sessions.delete(id)) return;
    void sandboxes?.destroy(sessionTraceId(id));
  };
  const expire = (id: string, s: Session): void => {
    endSession(id);
    void s.transport.close().catch(() => {});
  };
  const evictOne = (): void => {
    let oldest: [string, Session] | undefined;
    for (const e of sessions) if (e[1].inflight === 0 && (!oldest || e[1].lastUsed < oldest[1].lastUsed)) oldest = e;
    if (oldest) expire(...oldest);
  };
  const ttlMs = config.sandbox.ttlMs;
  const sweeper = setInterval(
    () => {
      const now = Date.now();
      for (const [id, s] of sessions) {
        if (s.inflight === 0 && now - s.lastUsed > ttlMs) expire(id, s);
      }
    },
    Math.min(60_000, Math.max(1_000, Math.floor(ttlMs / 4))),
  );
  sweeper.unref();
  app.addHook('onClose', async () => {
    clearInterval(sweeper);
    await modern.close();
    await Promise.all([...sessions.values()].map((s) => s.transport.close().catch(() => {})));
    sessions.clear();
  });

  async function openSession(web: Request, opts: { authInfo: AuthInfo; parsedBody: unknown }): Promise<Response> {
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      maxRequestBodySize: config.bodyLimitBytes,
      onsessioninitialized: (id) => {
        if (sessions.size >= MAX_SESSIONS) evictOne();
        sessions.set(id, { transport, lastUsed: Date.now(), inflight: 0 });
      },
      onsessionclosed: (id) => endSession(id),
    });
    await factory().connect(transport);
    return transport.handleRequest(web, opts);
  }

  async function legacy(req: FastifyRequest, web: Request, opts: { authInfo: AuthInfo; parsedBody: unknown }): Promise<Response> {
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const s = sessions.get(id);
      // The protocol's answer to an unknown (expired) session: 404, and the client starts a new one.
      if (!s) return Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, { status: 404 });
      s.inflight++;
      s.lastUsed = Date.now();
      try {
        return await s.transport.handleRequest(web, opts);
      } finally {
        s.inflight--;
        s.lastUsed = Date.now();
      }
    }
    if (req.method === 'POST' && isInitializeRequest(req.body)) return openSession(web, opts);
    return stateless(web, opts);
  }

  async function handle(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const ac = new AbortController();
    reply.raw.once('close', () => ac.abort());
    const web = toWebRequest(req, ac.signal);
    const opts = {
      // The credential the auth hook accepted; the SDK passes it to the tools/call handler.
      authInfo: { token: '', clientId: req.credential?.label ?? '', scopes: [] } satisfies AuthInfo,
      parsedBody: req.body,
    };
    const isLegacy = req.method !== 'POST' || (await isLegacyRequest(web, req.body));
    await send(reply, isLegacy ? await legacy(req, web, opts) : await modern.fetch(web, opts));
  }

  app.post('/mcp', handle);
  app.get('/mcp', handle);
  app.delete('/mcp', handle);
}
