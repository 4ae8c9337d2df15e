// A limit's refusal, worded for who is asking. On the trainer's routes (tool calls, grades) a 4xx
// is shown to the model and trained on, while a 5xx is retried (3 times, then the rollout is
// discarded); so there a limit answers 503 with Retry-After, elsewhere the usual 429. The caller
// sets the Retry-After header.
import type { FastifyRequest } from 'fastify';
import { errors, type RftError } from '../errors.js';

export function limitRefusal(req: FastifyRequest, retryAfterS: number, reason: 'requests' | 'auth_failures'): RftError {
  if (req.routeOptions.config.trainer) return errors.rateLimitedRetry(retryAfterS, reason);
  return reason === 'requests' ? errors.rateLimited(retryAfterS) : errors.authRateLimited(retryAfterS);
}
