// A server on Postgres while the database goes away and comes back (through a loopback proxy):
// calls answer 503 RFT_ERR_STORE (the trainer retries), /readyz says unavailable, and the same
// server recovers without a restart.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearer, fixtureGraders, fixtureTools, functionCall } from '../helpers/fixtures.js';
import { describeIf } from '../helpers/require.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { runs } from '../fixtures/units/tools/echo.js';
import { dropSchema, postgresUnavailable, randomSchema } from './postgres-db.js';
import { startPgProxy, type PgProxy } from './postgres-proxy.js';

const unavailable = await postgresUnavailable();
const schema = randomSchema();
let proxy: PgProxy;
let s: TestServer;

const call = (body: unknown) => fetch(`${s.url}/tools`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(s.key) }, body: JSON.stringify(body) });

describeIf(unavailable === undefined, 'Postgres', unavailable ?? '')('a Postgres-backed server through a database outage', () => {
  beforeAll(async () => {
    proxy = await startPgProxy();
    s = await startTestServer({
      toolsDir: fixtureTools,
      gradersDir: fixtureGraders,
      env: { RFT_STORE: 'postgres', RFT_DATABASE_URL: proxy.url, RFT_PG_SCHEMA: schema, RFT_INSTANCE_ID: 'outage' },
    });
  });
  afterAll(async () => {
    await s?.close();
    await proxy?.close();
    await dropSchema(schema);
  });

  it('answers 503 RFT_ERR_STORE without running the tool, reports unavailable, and recovers when the database is back', async () => {
    await proxy.down();
    const during = functionCall('echo', { text: 'during' });
    const res = await call(during);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_STORE');
    expect(runs.get(during.trace_id)).toBeUndefined();
    expect((await fetch(`${s.url}/readyz`)).status).toBe(503);

    await proxy.up();
    const retried = await call(during);
    expect(retried.status).toBe(200);
    expect(((await retried.json()) as { output: string }).output).toBe('during');
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
  });
});
