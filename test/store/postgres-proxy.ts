// A loopback TCP proxy in front of the test Postgres, to cut connections the way a pooler, the
// network or a failover would: swallow one reply and drop that connection, or go down entirely.
import net from 'node:net';
import { databaseUrl } from './postgres-db.js';

export interface PgProxy {
  /** The database URL through the proxy. */
  url: string;
  /** The next reply from Postgres (on any connection) is swallowed and its connection cut. */
  dropNextReply(): void;
  /** Cuts every connection and refuses new ones, until up(). */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startPgProxy(): Promise<PgProxy> {
  const target = new URL(databaseUrl);
  let armed = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream);
    let dropping = false;
    upstream.on('data', (d: Buffer) => {
      if (dropping) return;
      if (armed) {
        armed = false;
        dropping = true;
        // Postgres has committed and sent its reply; the client never sees it.
        setTimeout(() => (client.destroy(), upstream.destroy()), 200);
        return;
      }
      client.write(d);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) => new Promise<number>((resolve) => server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  const port = await listen(0);
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${port}`;
  return {
    url: url.toString(),
    dropNextReply: () => (armed = true),
    down: stop,
    up: async () => void (await listen(port)),
    close: stop,
  };
}
