// The Redis connection behind shared rate limits (RFT_REDIS_URL): every replica counts in the same
// keys, through @fastify/rate-limit's own Redis store. Checked at boot (a wrong URL stops the
// start); afterwards an outage fails open: commands fail at once instead of queueing (no offline
// queue, one try), the plugin skips the limit for that request, and a warning is logged. A limit
// that cannot be counted must not turn the trainer's calls into errors.
import { Redis } from 'ioredis';

export type { Redis };
import type { Logger } from 'pino';
import { redactUrl } from '../config.js';
import { errors } from '../errors.js';

const CONNECT_TIMEOUT_MS = 2_000;
/** A rate-limit check waits at most this long for Redis before the request goes on unlimited. */
const COMMAND_TIMEOUT_MS = 500;
const WARN_EVERY_MS = 30_000;

export async function connectRedis(url: string, log: Logger): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    // Reconnect forever, backing off to 2 s: Redis coming back restores shared limits by itself.
    retryStrategy: (times) => Math.min(times * 100, 2_000),
    connectionName: 'rft-endpoints',
  });
  let lastWarn = 0;
  redis.on('error', (err: Error) => {
    const now = Date.now();
    if (now - lastWarn < WARN_EVERY_MS) return;
    lastWarn = now;
    log.warn({ err: err.message, redis: redactUrl(url) }, 'Redis unreachable: rate limits are not counted until it is back');
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (e) {
    redis.disconnect();
    throw errors.config(`cannot reach Redis at ${redactUrl(url)} (RFT_REDIS_URL): ${(e as Error).message}`);
  }
  return redis;
}
