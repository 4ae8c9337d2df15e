// A server on a Postgres of its own (a testcontainers container) while the database server crashes
// (SIGKILL: no clean shutdown) and restarts with crash recovery: every acknowledged call is still
// recorded, a call during the crash answers 503 RFT_ERR_STORE without running its tool, and the same
// server recovers by itself. The proxy-cut outage is postgres-outage.test.ts; this is the database
// process itself going away.
import { expect, it, vi } from 'vitest';
import { containersUnavailable, serviceImages, startPostgres } from '../helpers/containers.js';
import { bearer, fixtureGraders, fixtureTools, functionCall, newTrace } from '../helpers/fixtures.js';
import { describeIf } from '../helpers/require.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { runs } from '../fixtures/units/tools/echo.js';

const unavailable = containersUnavailable(serviceImages.postgres);

const call = (s: TestServer, body: unknown) =>
  fetch(`${s.url}/tools`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(s.key) }, body: JSON.stringify(body) });

describeIf(unavailable === undefined, 'Postgres container', unavailable ?? '')('a server while its Postgres crashes and restarts', () => {
  it('keeps every acknowledged call, answers 503 without running the tool during the crash, and recovers', async () => {
    await using pg = await startPostgres();
    const s = await startTestServer({
      toolsDir: fixtureTools,
      gradersDir: fixtureGraders,
      env: { RFT_STORE: 'postgres', RFT_DATABASE_URL: pg.url, RFT_INSTANCE_ID: 'crash', RFT_RATE_LIMIT: '0' },
    });
    try {
      const trace = newTrace();
      const acknowledged = [];
      for (let i = 0; i < 20; i++) {
        const body = functionCall('echo', { text: `before ${i}` }, { trace_id: trace, call_id: `call_${i}` });
        const res = await call(s, body);
        expect(res.status).toBe(200);
        acknowledged.push(body.call_id);
      }

      await pg.kill();
      const during = functionCall('echo', { text: 'during' }, { trace_id: trace, call_id: 'call_during' });
      const refused = await call(s, during);
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_STORE');
      expect((await fetch(`${s.url}/readyz`)).status).toBe(503);

      await pg.start();
      // The trainer's retry of the refused call, once the pool has reconnected.
      await vi.waitFor(async () => expect((await call(s, during)).status).toBe(200), { timeout: 30_000, interval: 250 });
      expect(runs.get(trace)).toBe(acknowledged.length + 1);
      const record = (await (await fetch(`${s.url}/v1/rollouts/${trace}`, { headers: bearer(s.key) })).json()) as { calls: { call_id: string }[] };
      expect(record.calls.map((c) => c.call_id)).toEqual([...acknowledged, 'call_during']);
      expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    } finally {
      await s.close();
    }
  }, 120_000);
});
