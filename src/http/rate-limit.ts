// Requests per credential and window (@fastify/rate-limit: in memory, or in Redis across replicas). Keyed by the
// credential's label, not the address: the trainer calls from shared addresses.
import type { FastifyInstance } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import type { Redis } from './redis.js';
import { limitRefusal } from './refusals.js';

/** With `redis`, every replica shares the counts (and a Redis outage lets requests through). */
export async function registerRateLimit(app: FastifyInstance, o: { max: number; windowMs: number }, redis?: Redis): Promise<void> {
  if (o.max <= 0) return;
  await app.register(rateLimit, {
    ...(redis ? { redis, nameSpace: 'rft-endpoints:rate-limit:', skipOnError: true } : {}),
    global: true,
    hook: 'preHandler',
    max: o.max,
    timeWindow: o.windowMs,
    keyGenerator: (req) => req.credential?.label ?? `ip:${req.ip}`,
    allowList: (req) => req.routeOptions.config.public === true,
    // The plugin sets Retry-After itself; the refusal's status depends on the route.
    errorResponseBuilder: (req, ctx) => limitRefusal(req, Math.ceil(ctx.ttl / 1000), 'requests'),
  });
}
