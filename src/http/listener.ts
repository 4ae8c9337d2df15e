// The one way a listener of the server is built: the main one (src/app.ts), the NeMo Gym door's and
// the private one (src/doors). Each gets the same request, header and keep-alive timeouts, its share
// of the process's connections with the connections that sent nothing useful closed first
// (./connections.ts), the body limit, URL decoding that answers a coded 400 (a URL rewrite that throws
// included: it would otherwise escape Fastify and end the process), and Fastify's and Node's own
// errors in the project's shape. A listener without credentials also refuses a foreign Host and
// browsers, on requests and WebSocket handshakes alike (./local-only.ts).
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { RftError } from '../errors.js';
import { ConnectionGuard } from './connections.js';
import { badUrl, errorServerOptions, rawReply, type ErrorLimits } from './error-replies.js';
import { localOnly, type LocalRules } from './local-only.js';

/** How long an idle connection is kept between requests, on every listener. */
export const KEEP_ALIVE_TIMEOUT_MS = 75_000;
/** Fastify's own default, for the listeners that name no other. */
const DEFAULT_MAX_PARAM_LENGTH = 100;

type OwnOptions = Omit<
  FastifyServerOptions,
  'bodyLimit' | 'requestTimeout' | 'connectionTimeout' | 'keepAliveTimeout' | 'rewriteUrl' | 'routerOptions' | 'http' | 'https' | 'frameworkErrors' | 'clientErrorHandler' | 'return503OnClosing'
> & { loggerInstance?: unknown };

export interface ListenerOptions {
  /** Its name in logs and refusals: main, nemo-gym, private. */
  name: string;
  /** What only this listener has: its logger, proxy trust, request ids, log controller. */
  fastify?: OwnOptions;
  bodyLimitBytes: number;
  /** The longest path parameter (the main listener's ids); Fastify's 100 otherwise. */
  maxParamLength?: number;
  /** Time for a request's headers, and for the whole request, to arrive (RFT_HEADERS_TIMEOUT_MS, RFT_BODY_TIMEOUT_MS). */
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Its share of the process's connections (./connections.ts splitConnections). */
  maxConnections: number;
  tls?: { cert: Buffer; key: Buffer } | undefined;
  /** A URL rewrite; one that throws (a bad escape it decodes) answers 400. */
  rewriteUrl?: (raw: IncomingMessage) => string;
  /** Set for a listener without credentials: the Host names and browser origins it accepts. */
  local?: LocalRules | undefined;
  /** Fastify's 503 while closing is left off: the listener answers it itself (registerErrorReplies). */
  ownClosingReply?: boolean;
}

export interface Listener {
  app: FastifyInstance;
  connections: ConnectionGuard;
  /** What its error replies name (src/http/error-replies.ts toRftError). */
  limits: ErrorLimits;
}

export function buildListener(o: ListenerOptions): Listener {
  const maxParamLength = o.maxParamLength ?? DEFAULT_MAX_PARAM_LENGTH;
  const limits = { bodyLimitBytes: o.bodyLimitBytes, maxParamLength };
  const { return503OnClosing, ...errorOptions } = errorServerOptions(limits);
  // Node's timeouts bound how long a request takes to *arrive* (headers, then headers and body),
  // checked every second; a handler's own time (a tool may run 10 minutes) is not counted.
  const timeouts = { headersTimeout: o.headersTimeoutMs, connectionsCheckingInterval: 1000 };
  const rewrite = o.rewriteUrl;
  const unreadable = new WeakSet<IncomingMessage>();
  const app = Fastify({
    ...(o.fastify as FastifyServerOptions),
    bodyLimit: o.bodyLimitBytes,
    requestTimeout: o.bodyTimeoutMs,
    connectionTimeout: 0,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    routerOptions: { maxParamLength },
    ...errorOptions,
    ...(o.ownClosingReply ? { return503OnClosing } : {}),
    ...(rewrite
      ? {
          rewriteUrl: (raw: IncomingMessage) => {
            try {
              return rewrite(raw);
            } catch {
              unreadable.add(raw);
              return raw.url ?? '/';
            }
          },
        }
      : {}),
    ...(o.tls ? { https: { ...o.tls, handshakeTimeout: o.headersTimeoutMs, ...timeouts } } : { http: timeouts }),
  }) as unknown as FastifyInstance;
  const log = app.log;
  const connections = new ConnectionGuard(o.maxConnections, (stats) =>
    log.warn({ listener: o.name, ...stats }, 'connection cap reached with every connection busy: a new connection was refused'),
  );
  connections.attach(app.server, o.tls !== undefined);
  const refusal = o.local ? localOnly(o.local) : undefined;
  // First of the listener's hooks: nothing of a refused request runs.
  app.addHook('onRequest', (req, _reply, done) => {
    if (unreadable.has(req.raw)) return done(badUrl());
    done(refusal?.(req.headers));
  });
  guardUpgrades(app.server as Server, connections, refusal);
  return { app, connections, limits };
}

/**
 * A WebSocket handshake never reaches Fastify's hooks (a door listens to the server's 'upgrade'
 * event): the refusal is checked before any listener of that event hears of it.
 */
function guardUpgrades(server: Server, connections: ConnectionGuard, refusal: ((h: IncomingMessage['headers']) => RftError | undefined) | undefined): void {
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: unknown[]) => boolean;
  server.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event === 'upgrade') {
      const [req, socket] = args as [IncomingMessage, Socket];
      const e = refusal?.(req.headers);
      if (e) {
        socket.end(rawReply(e));
        return true;
      }
      connections.upgraded(socket);
    }
    return emit(event, ...args);
  }) as Server['emit'];
}

