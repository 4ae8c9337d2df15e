// Authentication wired into Fastify, for every route but the public ones (health checks): a key is
// checked in onRequest, from the headers, before the body is read, so a caller without a valid
// key never gets to send one; a signature's headers are checked there too, and its HMAC in
// preValidation, over the raw body. Failures are counted per client address; past the limit the
// address is refused before anything is checked. Routes added later (MCP) get the same hooks.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errors, isRftError } from '../errors.js';
import { limitRefusal } from '../http/refusals.js';
import type { Authenticator } from './authenticator.js';
import type { FailureLimiter } from './failure-limiter.js';
import type { KeyHeader } from './key-headers.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A header of the route's own protocol that carries the bare key too (ORS's X-API-Key), after the configured ones. */
    keyHeader?: KeyHeader;
  }
}

export interface AuthenticationHooks {
  auth: Authenticator;
  failures: FailureLimiter | undefined;
  /** Told when a request's credential is valid (the connection guard trusts its connection). */
  onAuthenticated?: (req: FastifyRequest) => void;
}

/** A refusal decided before the body is read: the connection is closed after the reply. */
function refuseEarly(reply: FastifyReply, done: (err?: Error) => void, err: Error): void {
  void reply.header('connection', 'close');
  done(err);
}

export function registerAuthentication(app: FastifyInstance, o: AuthenticationHooks): void {
  app.addHook('onRequest', (req, reply, done) => {
    if (req.routeOptions.config.public) return done();
    const wait = o.failures?.blockedFor(req.ip) ?? 0;
    const extra = req.routeOptions.config.keyHeader;
    if (wait > 0 && !o.auth.carriesKnownKey(req.headers, extra)) {
      void reply.header('retry-after', String(wait));
      return refuseEarly(reply, done, limitRefusal(req, wait, 'auth_failures'));
    }
    let r;
    try {
      r = o.auth.fromHeaders(req.headers, extra);
    } catch (e) {
      o.failures?.fail(req.ip);
      return refuseEarly(reply, done, e as Error);
    }
    if (r.method === 'pending-signature') {
      req.pendingSignature = r;
    } else {
      req.credential = r;
      o.onAuthenticated?.(req);
    }
    done();
  });

  app.addHook('preValidation', (req, _reply, done) => {
    const pending = req.pendingSignature;
    if (!pending) return done();
    o.auth.verifyBody(pending, req.rawBody).then(
      (c) => {
        req.credential = c;
        o.onAuthenticated?.(req);
        done();
      },
      (e: unknown) => {
        if (isRftError(e) && e.statusCode === 401) {
          o.failures?.fail(req.ip);
          return done(e);
        }
        // The webhook-id could not be recorded: ours to retry, not the caller's mistake.
        done(isRftError(e) ? e : errors.store(e instanceof Error ? e.message : String(e)));
      },
    );
  });
}
