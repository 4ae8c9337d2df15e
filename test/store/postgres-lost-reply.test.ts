// Replies lost after the database committed (a pooler, the network or a failover cut the
// connection): a loopback TCP proxy between the store and Postgres swallows one reply and drops
// the connection. The store must neither fail the call nor leave its call id stuck "running".
import { afterAll, beforeAll, expect, it } from 'vitest';
import net from 'node:net';
import { describeIf } from '../helpers/require.js';
import { begin } from './contract.js';
import { databaseUrl, openStore, postgresUnavailable, testSchema } from './postgres-db.js';

const unavailable = await postgresUnavailable();

/** Forwards to Postgres; once armed, swallows the next reply and then cuts that connection. */
function replyDropper() {
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
        // The server has committed and sent its reply; the client never sees it.
        setTimeout(() => (client.destroy(), upstream.destroy()), 200);
        return;
      }
      client.write(d);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  return {
    listen: () => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => {
      const u = new URL(databaseUrl);
      u.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
      resolve(u.toString());
    })),
    arm: () => (armed = true),
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

const proxy = replyDropper();
let url = '';

describeIf(unavailable === undefined, 'Postgres', unavailable ?? '')('PostgresStore when a reply is lost after the commit', () => {
  beforeAll(async () => {
    url = await proxy.listen();
  });
  afterAll(() => proxy.close());

  it('still starts a call whose admission committed but whose reply was lost, once', async () => {
    const store = await openStore(testSchema(), { url });
    proxy.arm();
    const r = await store.beginCall(begin('trace_lost', 'c1'));
    expect(r).toMatchObject({ kind: 'started', call: { seq: 1, status: 'running' }, budget: { used: 1 } });
    expect(await store.listCalls('trace_lost')).toHaveLength(1);
    expect((await store.beginCall(begin('trace_lost', 'c1'))).kind).toBe('existing');
  });

  it('records a finish whose reply was lost', async () => {
    const store = await openStore(testSchema(), { url });
    await store.beginCall(begin('trace_fin', 'c1'));
    proxy.arm();
    await store.finishCall('trace_fin', 'c1', { output: 'done', status: 'ok', finishedAt: 5, durationMs: 1, outputBytes: 4, truncated: false });
    expect(await store.getCall('trace_fin', 'c1')).toMatchObject({ status: 'ok', output: 'done' });
  });

  it('answers a read whose first reply was lost', async () => {
    const store = await openStore(testSchema(), { url });
    await store.beginCall(begin('trace_read', 'c1'));
    proxy.arm();
    expect(await store.getBudget('trace_read', 0)).toMatchObject({ used: 1 });
  });

  it('does not repeat a webhook-id claim whose reply was lost (a repeat would refuse the genuine request)', async () => {
    const store = await openStore(testSchema(), { url });
    proxy.arm();
    await expect(store.rememberWebhookId('msg_lost', 10_000, 0)).rejects.toThrow(/terminated|connection/i);
  });
});
