// Every error leaves in the project's shape, {error: {code, message, details?}}, Fastify's and
// Node's own included: routing (404, 414, bad URL), body parsing (413, 415, 400), client errors
// written on the raw socket (408 timeouts, 431, malformed HTTP), and the 503 while closing.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import { errors, isRftError, type RftError } from '../errors.js';
import { isFailureCounted } from '../metrics/outcomes.js';

/**
 * Retry-After of a 503 (the trainer retries a 5xx): the error's own retry_after_s, else 1 s. Every
 * 503 is a "not now" (a sandbox slot, the store, a replica draining), so every one says when.
 */
export function retryAfterS(e: RftError): number {
  const s = e.details?.['retry_after_s'];
  return typeof s === 'number' && s > 0 ? Math.ceil(s) : 1;
}

export interface ErrorLimits {
  bodyLimitBytes: number;
  maxParamLength: number;
}

/** A URL that cannot be decoded, on any listener (Fastify's router, a listener's own rewrite). */
export function badUrl(): RftError {
  return errors.badRequest('the URL is not valid (bad percent-encoding)');
}

/** The coded error for anything a route, a hook or Fastify itself threw. */
export function toRftError(err: Partial<FastifyError> & Error, req: FastifyRequest | undefined, limits: ErrorLimits): RftError {
  if (isRftError(err)) return err;
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.bodyTooLarge(limits.bodyLimitBytes);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_TYPE': {
      const ct = req?.headers['content-type'];
      return errors.unsupportedMediaType(ct === undefined || ct === '' ? undefined : ct);
    }
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return errors.uriTooLong(limits.maxParamLength);
    case 'FST_ERR_BAD_URL':
      return badUrl();
    case 'FST_ERR_NOT_FOUND':
      return errors.notFound(`route ${req ? `${req.method} ${req.url.split('?')[0]}` : ''}`);
  }
  if (err.validation || err.code === 'FST_ERR_VALIDATION') return errors.badRequest(err.message);
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    // A Fastify 4xx without a mapping of its own (content length mismatch, empty body...).
    return errors.badRequest(err.message, err.code ? { cause: err.code } : undefined);
  }
  return errors.internal('internal error');
}

function send(req: FastifyRequest, reply: FastifyReply, e: RftError, err?: Error): void {
  req.errorCode = e.code; // for the metrics: whose failure a 5xx is
  // Fastify answers a body error with "Connection: close", and Node then closes a socket the client
  // is still writing the body to: the unread bytes make the kernel reset it, and the client sees
  // EPIPE instead of the 413 (the CLI retried and said "cannot reach the server"). Kept alive, Node
  // reads the rest of the body and drops it (RFT_BODY_TIMEOUT_MS bounds that), and the client reads
  // the 413 once it has sent its body.
  if (e.code === errors.bodyTooLarge.code && !req.raw.complete) reply.removeHeader('connection');
  if (isFailureCounted(e)) req.failureCounted = true;
  if (e.statusCode === 503 && !reply.hasHeader('retry-after')) void reply.header('retry-after', String(retryAfterS(e)));
  if (e.statusCode >= 500) req.log.error({ err }, 'request failed');
  else req.log.info({ code: e.code, status: e.statusCode }, e.message);
  void reply.status(e.statusCode).send(e.toJSON());
}

/** Fastify's options for errors raised before a route is found, and on the raw socket. */
export function errorServerOptions(limits: ErrorLimits): Pick<FastifyServerOptions, 'frameworkErrors' | 'clientErrorHandler' | 'return503OnClosing'> {
  return {
    frameworkErrors: (err, req, reply) => send(req, reply, toRftError(err, req, limits), err),
    clientErrorHandler,
    // Fastify's own closing 503 has its own body; registerErrorReplies answers it in ours.
    return503OnClosing: false,
  };
}

function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const e =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? errors.requestTimeout()
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? errors.headersTooLarge()
        : errors.malformedHttp();
  this.log.debug({ err }, 'client error');
  if (socket.writable) socket.write(rawReply(e));
  socket.destroy();
}

/** A coded error as a whole HTTP response, for a socket no response object holds (a client error, a refused WebSocket handshake). */
export function rawReply(e: RftError): string {
  const body = JSON.stringify(e.toJSON());
  return (
    `HTTP/1.1 ${e.statusCode} ${STATUS_CODES[e.statusCode]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

export function registerErrorReplies(app: FastifyInstance, limits: ErrorLimits): void {
  app.setErrorHandler((err: FastifyError, req, reply) => send(req, reply, toRftError(err, req, limits), err));
  app.setNotFoundHandler((req, reply) => send(req, reply, errors.notFound(`route ${req.method} ${req.url.split('?')[0]}`)));
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // While draining, new requests on open connections: retry elsewhere or later.
  app.addHook('onRequest', (req, reply, done) => {
    if (!closing) return done();
    void reply.header('connection', 'close').header('retry-after', '1');
    send(req, reply, errors.shuttingDown());
  });
}
