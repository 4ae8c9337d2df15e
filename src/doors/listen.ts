// A door on its own listener (the NeMo Gym door's, the private one): what its listener takes from the
// configuration (src/http/listener.ts builds it), then listen, and say where.
import type { FastifyInstance } from 'fastify';
import type { AppConfig } from '../config.js';
import { defaultMaxConnections, splitConnections } from '../http/connections.js';
import type { ListenerOptions } from '../http/listener.js';

export type DoorListener = 'nemo-gym' | 'private' | 'metrics';

/** A door listener's settings: the main listener's timeouts, its share of the connections, its Host and Origin rules. */
export type DoorListenerSettings = Pick<ListenerOptions, 'headersTimeoutMs' | 'bodyTimeoutMs' | 'maxConnections' | 'local'>;

const SETTINGS = {
  'nemo-gym': { key: 'nemoGym', prefix: 'RFT_NEMO_GYM' },
  private: { key: 'private', prefix: 'RFT_PRIVATE' },
  metrics: { key: 'metrics', prefix: 'RFT_METRICS' },
} as const;

/** maxConnections: its share of the process's budget (src/app.ts splits it); by default a quarter of the budget. */
export function doorListenerSettings(config: AppConfig, door: DoorListener, maxConnections?: number): DoorListenerSettings {
  const { key, prefix } = SETTINGS[door];
  const c = config[key];
  return {
    headersTimeoutMs: config.connections.headersTimeoutMs,
    bodyTimeoutMs: config.connections.bodyTimeoutMs,
    maxConnections: maxConnections ?? splitConnections(config.connections.max || defaultMaxConnections(), { [door]: c.maxConnections })[door]!,
    local: {
      listener: door,
      bound: c.host,
      hosts: c.allowedHosts,
      origins: c.allowedOrigins,
      hostsSetting: `${prefix}_ALLOWED_HOSTS`,
      originsSetting: `${prefix}_ALLOWED_ORIGINS`,
    },
  };
}

/** Listens on host:port (0 for any free port); the URL it answers on. */
export async function listenDoor(app: FastifyInstance, host: string, port: number): Promise<string> {
  await app.listen({ host, port });
  const addr = app.server.address();
  const bound = typeof addr === 'object' && addr ? addr.port : port;
  return `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
}
