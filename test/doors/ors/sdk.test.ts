// The ORS reference client itself (openrewardstandard/python-sdk, run from its source with aiohttp:
// RFT_TEST_ORS_SDK_SRC=<its src/>, RFT_TEST_ORS_PYTHON=<a python with aiohttp and tenacity>) against the
// door, through a proxy that keeps the bytes it sends: an episode with 12 s of think time (its pings meanwhile)
// ends with the submit's reward, and no session it opened is left. The bytes must be those of
// test/fixtures/ors/sdk-requests.json (which wire.test.ts replays on every run); RFT_TEST_ORS_RECORD=1
// writes that file afresh from this run.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { HttpStatusError, OrsClient, recordingProxy, toFixture } from '../../helpers/ors-client.js';

const src = process.env.RFT_TEST_ORS_SDK_SRC;
const python = process.env.RFT_TEST_ORS_PYTHON ?? 'python3';
const env = { ...process.env, PYTHONPATH: src ?? '' };
const reason = !src
  ? "RFT_TEST_ORS_SDK_SRC (openrewardstandard/python-sdk's src/) is not set"
  : spawnSync(python, ['-c', 'import aiohttp, tenacity, ors.client'], { env }).status !== 0
    ? `${python} cannot import aiohttp, tenacity and ors.client from ${src}`
    : '';
const FIXTURE = join(repoRoot, 'test/fixtures/ors/sdk-requests.json');
const THINK_S = 12;

/** The request line of a recorded request. */
const line = (text: string) => text.slice(0, text.indexOf('\r\n'));

describeWithCheckout(reason === '', 'the ORS reference client', reason)('the ORS reference client (python-sdk) against the door', () => {
  let server: TestServer;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_SQLITE_SYNC: 'normal' } });
    proxy = await recordingProxy(server.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await server?.close();
  });

  it('an episode survives the model\'s think time, gets its reward, and leaves no session; its bytes are the fixture\'s', async () => {
    const child = spawn(python, [join(repoRoot, 'test/fixtures/ors/sdk-episode.py'), proxy.url, 'finqa', String(THINK_S), 'Answer: $48.6 million'], {
      env: { ...env, ORS_API_KEY: server.key },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(code, stderr).toBe(0);
    const out = JSON.parse(stdout) as Record<string, unknown>;
    expect(out).toMatchObject({ splits: ['train', 'validation'], first: { reward: null, finished: false }, submit: { reward: 1, finished: true } });
    expect(out.error).toBeUndefined();

    const texts = toFixture(proxy.requests, { host: new URL(proxy.url).host, key: server.key });
    // its pings during the think time: at once, then every 10 s
    expect(texts.filter((t) => line(t).startsWith('POST /ping ')).length).toBeGreaterThanOrEqual(2);
    // every session it opened (two catalogue calls' and the episode's) is gone
    const sids = [...new Set(proxy.requests.map((r) => /^X-Session-ID: (\S+)\r$/im.exec(r.toString())?.[1]).filter((s) => s !== undefined))];
    expect(sids).toHaveLength(3);
    const probe = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
    for (const sid of sids) await expect(probe.request('POST', '/ping', undefined, sid, false)).rejects.toMatchObject({ status: 404 } satisfies Partial<HttpStatusError>);

    if (process.env.RFT_TEST_ORS_RECORD === '1') {
      const versions = spawnSync(python, ['-c', 'import aiohttp, sys; print(aiohttp.__version__, sys.version.split()[0])'], { env, encoding: 'utf8' }).stdout.trim().split(' ');
      const recorded = {
        source: `openrewardstandard/python-sdk ${process.env.RFT_TEST_ORS_SDK_COMMIT ?? 'a399408'} (ors-sdk 0.1.0), aiohttp ${versions[0]}, Python ${versions[1]}: test/fixtures/ors/sdk-episode.py through test/doors/ors/sdk.test.ts (RFT_TEST_ORS_RECORD=1)`,
        requests: texts,
      };
      writeFileSync(FIXTURE, `${JSON.stringify(recorded, null, 2)}\n`);
    }
    // The bytes the client sends are those the replay sends (pings as many as the think time gave).
    const fixture = (JSON.parse(readFileSync(FIXTURE, 'utf8')) as { requests: string[] }).requests;
    expect(texts.filter((t) => !line(t).startsWith('POST /ping '))).toEqual(fixture.filter((t) => !line(t).startsWith('POST /ping ')));
    expect(new Set(texts.filter((t) => line(t).startsWith('POST /ping ')))).toEqual(new Set(fixture.filter((t) => line(t).startsWith('POST /ping '))));
  }, 120_000);
});
