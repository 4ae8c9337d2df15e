// The one body parser: JSON, kept as raw bytes too (signatures are computed over them), with a
// nesting limit. No body at all is accepted whatever its Content-Type; any other body is a 415.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors, type RftError } from '../errors.js';
import { cutValue, jsonDepthExceeds } from '../protocol/json-depth.js';

/**
 * A body that cannot be used is answered after authentication (a preValidation hook registered
 * after it): an unsigned caller learns nothing about its body, and a bad signature over a bad body
 * is counted as the failed authentication it is.
 */
export function registerJsonBody(app: FastifyInstance, maxDepth: number): void {
  // Fastify's own parser (secure-json-parse) only for a body that could carry a __proto__ key
  // (spelled out or with \u escapes), which it refuses; any other body is plain JSON.parse, which is
  // all that parser does for it anyway, minus its regex scan of the whole body.
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  const refuse = () => errors.badRequest('request body is not valid JSON (or carries a __proto__ key)');
  app.removeAllContentTypeParsers();
  const fail = (req: FastifyRequest, done: (err: Error | null, body?: unknown) => void, err: RftError) => {
    req.bodyError = err;
    done(null, undefined);
  };
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body: Buffer, done) => {
    req.rawBody = body;
    if (body.length === 0) return done(null, undefined);
    let parsed = body;
    if (jsonDepthExceeds(body, maxDepth)) {
      // A grade's sample.output_json is the model's answer parsed by the trainer: the model, not the
      // dataset or the trainer, decides its depth. Refusing it would let a model turn a bad answer
      // into a discarded rollout, so it is cut to null and the grade goes on.
      const cut = req.routeOptions.config.cutDeepOutputJson ? cutValue(body, ['sample', 'output_json']) : undefined;
      if (!cut || jsonDepthExceeds(cut, maxDepth)) return fail(req, done, errors.bodyTooDeep(maxDepth));
      req.cutFromBody = 'sample.output_json';
      parsed = cut;
    }
    const text = parsed.toString('utf8');
    if (text.indexOf('__proto__') === -1 && text.indexOf('\\u') === -1) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return fail(req, done, refuse());
      }
      return done(null, value);
    }
    void parseJson(req, text, (err: Error | null, value?: unknown) => (err ? fail(req, done, refuse()) : done(null, value)));
  });
  // aiohttp labels every POST it sends without a body application/octet-stream (the ORS client's
  // /ping, /delete and /delete_session): there is nothing to refuse. The stream is not read either way,
  // and an unknown route stays a 404, as Fastify answers it.
  app.addContentTypeParser('*', (req, _payload, done) => {
    const { 'content-length': length, 'transfer-encoding': chunked, 'content-type': type } = req.headers;
    if (req.is404 || (chunked === undefined && (length === undefined || length === '0'))) return done(null, undefined);
    fail(req, done, errors.unsupportedMediaType(type === '' ? undefined : type));
  });
}

/** Answers a body the parser refused; registered after authentication. */
export function registerBodyErrors(app: FastifyInstance): void {
  app.addHook('preValidation', (req, _reply, done) => done(req.bodyError));
}
