// Replies lost after the database committed (a pooler, the network or a failover cut the
// connection): a loopback TCP proxy between the store and Postgres swallows one reply and drops
// the connection. The store must neither fail the call nor leave its call id stuck "running".
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { begin } from './contract.js';
import { openStore, postgresUnavailable, testSchema } from './postgres-db.js';
import { startPgProxy, type PgProxy } from './postgres-proxy.js';

const unavailable = await postgresUnavailable();

let proxy: PgProxy;

describeIf(unavailable === undefined, 'Postgres', unavailable ?? '')('PostgresStore when a reply is lost after the commit', () => {
  beforeAll(async () => {
    proxy = await startPgProxy();
  });
  afterAll(() => proxy.close());

  it('still starts a call whose admission committed but whose reply was lost, once', async () => {
    const store = await openStore(testSchema(), { url: proxy.url });
    proxy.dropNextReply();
    const r = await store.beginCall(begin('trace_lost', 'c1'));
    expect(r).toMatchObject({ kind: 'started', call: { seq: 1, status: 'running' }, budget: { used: 1 } });
    expect(await store.listCalls('trace_lost')).toHaveLength(1);
    expect((await store.beginCall(begin('trace_lost', 'c1'))).kind).toBe('existing');
  });

  it('records a finish whose reply was lost', async () => {
    const store = await openStore(testSchema(), { url: proxy.url });
    await store.beginCall(begin('trace_fin', 'c1'));
    proxy.dropNextReply();
    await store.finishCall('trace_fin', 'c1', { output: 'done', status: 'ok', finishedAt: 5, durationMs: 1, outputBytes: 4, truncated: false });
    expect(await store.getCall('trace_fin', 'c1')).toMatchObject({ status: 'ok', output: 'done' });
  });

  it('answers a read whose first reply was lost', async () => {
    const store = await openStore(testSchema(), { url: proxy.url });
    await store.beginCall(begin('trace_read', 'c1'));
    proxy.dropNextReply();
    expect(await store.getBudget('trace_read', 0)).toMatchObject({ used: 1 });
  });

  it('does not repeat a webhook-id claim whose reply was lost (a repeat would refuse the genuine request)', async () => {
    const store = await openStore(testSchema(), { url: proxy.url });
    proxy.dropNextReply();
    await expect(store.rememberWebhookId('msg_lost', 'h1', 10_000, 0)).rejects.toThrow(/terminated|connection/i);
  });
});
