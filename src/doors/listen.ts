// A door on its own listener (the NeMo Gym door's, the private one): listen, and say where.
import type { FastifyInstance } from 'fastify';

/** Listens on host:port (0 for any free port); the URL it answers on. */
export async function listenDoor(app: FastifyInstance, host: string, port: number): Promise<string> {
  await app.listen({ host, port });
  const addr = app.server.address();
  const bound = typeof addr === 'object' && addr ? addr.port : port;
  return `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
}
