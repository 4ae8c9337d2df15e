// Training steps against a real server with bubblewrap sandboxes, for the tests of the warm pool's
// visibility (GET /v1/stats, the dashboard): a step is a burst of new rollouts arriving together,
// each making one `shell` call; the pool learns it once the burst is over (its gap: 2 s quiet).
import { request } from 'undici';
import { startTestServer, type TestServer } from './server.js';
import { waitFor } from './wait.js';
import type { z } from 'zod';
import type { statsReplySchema } from '../../src/stats/schema.js';
import type { PoolReply } from '../../src/stats/pool.js';

type StatsReply = z.infer<typeof statsReplySchema>;

/** A server with bwrap sandboxes and the learning pool on (floor 1, the default memory budget). */
export function startPoolServer(): Promise<TestServer> {
  return startTestServer({ env: { RFT_SANDBOX: 'bwrap', RFT_SANDBOX_CAP: '32', RFT_SANDBOX_WARM: '1' } });
}

async function get(srv: TestServer, path: string): Promise<{ status: number; text: string }> {
  const res = await request(`${srv.url}${path}`, { headers: { authorization: `Bearer ${srv.key}` } });
  return { status: res.statusCode, text: await res.body.text() };
}

/** `n` new rollouts at once (a step), each with one `shell` call; fails unless every call answered 200. */
export async function step(srv: TestServer, prefix: string, n: number): Promise<void> {
  const statuses = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await request(`${srv.url}/tools`, {
        method: 'POST',
        headers: { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'function_call', call_id: 'c1', name: 'shell', arguments: JSON.stringify({ command: 'echo hi' }), trace_id: `${prefix}_${i}` }),
      });
      await res.body.text();
      return res.statusCode;
    }),
  );
  if (statuses.some((s) => s !== 200)) throw new Error(`a call of step ${prefix} failed: ${statuses.join(' ')}`);
}

/** GET /v1/stats (rollouts only: the pool's state does not depend on the parts asked for). */
export async function stats(srv: TestServer): Promise<StatsReply> {
  const r = await get(srv, '/v1/stats?since=15m&include=rollouts');
  if (r.status !== 200) throw new Error(`GET /v1/stats: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as StatsReply;
}

/** The pool's part of GET /v1/stats (fails when sandboxes are off or the driver keeps no pool). */
export async function pool(srv: TestServer): Promise<NonNullable<PoolReply>> {
  const p = (await stats(srv)).this_replica.sandboxes?.pool;
  if (!p) throw new Error('no pool in GET /v1/stats');
  return p;
}

export async function metricsText(srv: TestServer): Promise<string> {
  return (await get(srv, '/metrics')).text;
}

/** Waits until the pool holds `n` prepared sandboxes of its latest kind (it learned the step and filled). */
export async function poolWarm(srv: TestServer, n: number): Promise<void> {
  await waitFor(`${n} warm sandboxes`, async () => (((await pool(srv)).kinds[0]?.warm ?? 0) >= n ? true : undefined), 60_000);
}
