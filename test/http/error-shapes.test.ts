// Every refusal, Fastify's and Node's own included, in the project's {error: {code, message}} shape.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, functionCall, newTrace, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { ID_MAX_LENGTH } from '../../src/protocol/wire.js';
import { exchange, open, parseReply } from './raw.js';
import { runs } from '../fixtures/units/tools/echo.js';
import { gate } from '../helpers/child-server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ env: { RFT_BODY_LIMIT_BYTES: '4096', RFT_HEADERS_TIMEOUT_MS: '1000', RFT_BODY_TIMEOUT_MS: '1500' } });
});
afterAll(() => s.close());

const codeOf = (body: string) => (JSON.parse(body) as { error?: { code: string } }).error?.code;

async function req(method: string, path: string, body?: string | object, headers: Record<string, string> = {}) {
  const res = await fetch(s.url + path, {
    method,
    headers: { ...bearer(s.key), ...(body !== undefined && typeof body === 'object' ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, code: codeOf(text), headers: res.headers };
}

describe('ids', () => {
  it(`serves every route for a trace_id of ${ID_MAX_LENGTH} characters, whatever its characters`, async () => {
    for (const trace of ['t'.repeat(ID_MAX_LENGTH), `trace_/?#%&+ é ${'漢'.repeat(20)} 🎲`.padEnd(ID_MAX_LENGTH, 'x')]) {
      const call = functionCall('echo', { text: 'x' }, { trace_id: trace, call_id: 'c'.repeat(ID_MAX_LENGTH) });
      expect((await fetch(s.url + '/tools', { method: 'POST', headers: { ...bearer(s.key), 'content-type': 'application/json' }, body: JSON.stringify(call) })).status).toBe(200);
      const path = `/v1/rollouts/${encodeURIComponent(trace)}`;
      const got = await fetch(s.url + path, { headers: bearer(s.key) });
      expect(got.status).toBe(200);
      expect(((await got.json()) as { trace_id: string }).trace_id).toBe(trace);
      expect((await req('POST', `${path}/regrade`, {})).code).toBe('RFT_ERR_NOT_GRADED');
      expect((await fetch(s.url + path, { method: 'DELETE', headers: bearer(s.key) })).status).toBe(200);
    }
  });

  it('refuses at intake an id longer than the maximum, or with control characters or unpaired surrogates', async () => {
    for (const over of [{ trace_id: 't'.repeat(ID_MAX_LENGTH + 1) }, { call_id: 'c'.repeat(ID_MAX_LENGTH + 1) }, { trace_id: 'trace\u001b[31m' }, { trace_id: 'trace_\ud800' }]) {
      const r = await req('POST', '/tools', functionCall('echo', { text: 'x' }, over));
      expect(r.status, JSON.stringify(over)).toBe(400);
      expect(r.code).toBe('RFT_ERR_BAD_REQUEST');
    }
    const grade = await req('POST', '/graders/exact', { sample: { output_text: 'a' }, item: {}, trace_id: 't'.repeat(ID_MAX_LENGTH + 1) });
    expect(grade.status).toBe(400);
  });

  it('answers a path segment over the maximum 414 in our shape', async () => {
    const r = await req('GET', `/v1/rollouts/${'t'.repeat(ID_MAX_LENGTH + 1)}`);
    expect(r.status).toBe(414);
    expect(r.code).toBe('RFT_ERR_URI_TOO_LONG');
  });
});

describe('Fastify\'s own errors, in our shape', () => {
  it('404 for an unknown route', async () => {
    expect(await req('GET', '/nope')).toMatchObject({ status: 404, code: 'RFT_ERR_NOT_FOUND' });
  });

  it('400 for a URL with broken percent-encoding', async () => {
    expect(await req('GET', '/v1/rollouts/%E0%A4%A')).toMatchObject({ status: 400, code: 'RFT_ERR_BAD_REQUEST' });
  });

  it('415 for an unsupported content type, and for a body without one', async () => {
    const body = JSON.stringify(functionCall('echo', { text: 'x' }));
    expect(await req('POST', '/tools', body, { 'content-type': 'text/plain' })).toMatchObject({ status: 415, code: 'RFT_ERR_UNSUPPORTED_MEDIA_TYPE' });
    expect(await req('POST', '/tools', body, { 'content-type': 'application/x-www-form-urlencoded' })).toMatchObject({ status: 415 });
    const bare = await exchange(s.url, `POST /tools HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    expect(bare.status).toBe(415);
    expect(codeOf(bare.body)).toBe('RFT_ERR_UNSUPPORTED_MEDIA_TYPE');
    bare.socket.destroy();
  });

  it('413 for a body over the limit, 400 for one that is not JSON', async () => {
    expect(await req('POST', '/tools', functionCall('echo', { text: 'x'.repeat(5000) }))).toMatchObject({ status: 413, code: 'RFT_ERR_BODY_TOO_LARGE' });
    expect(await req('POST', '/tools', '{"type":', { 'content-type': 'application/json' })).toMatchObject({ status: 400, code: 'RFT_ERR_BAD_REQUEST' });
  });

  it('408 when a request does not arrive in time, 431 for huge headers, 400 for malformed HTTP, each closing the connection', async () => {
    const slow = await exchange(s.url, `POST /tools HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"par`);
    expect(slow.status).toBe(408);
    expect(codeOf(slow.body)).toBe('RFT_ERR_REQUEST_TIMEOUT');
    await slow.closed;
    const big = await exchange(s.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(big.status).toBe(431);
    expect(codeOf(big.body)).toBe('RFT_ERR_HEADERS_TOO_LARGE');
    const junk = await exchange(s.url, 'NOT HTTP AT ALL\r\n\r\n');
    expect(junk.status).toBe(400);
    expect(codeOf(junk.body)).toBe('RFT_ERR_MALFORMED_HTTP');
    await junk.closed;
  });
});

describe('nesting', () => {
  let d: TestServer;
  beforeAll(async () => {
    d = await startFixtureServer({});
  });
  afterAll(() => d.close());

  /** The body as text: the test's own JSON.stringify cannot walk 5,000 levels either. */
  const withDeepItem = (body: Record<string, unknown>, n: number) =>
    JSON.stringify({ ...body, item: '@' }).replace('"@"', '{"a":'.repeat(n) + '1' + '}'.repeat(n));
  const post = async (path: string, body: string) => {
    const res = await fetch(d.url + path, { method: 'POST', headers: { ...bearer(d.key), 'content-type': 'application/json' }, body });
    const text = await res.text();
    return { status: res.status, code: codeOf(text), text };
  };

  it('answers an item nested 5,000 levels deep 400 on /tools and /grade, and records nothing', async () => {
    const trace = newTrace();
    const tool = await post('/tools', withDeepItem(functionCall('echo', { text: 'x' }, { trace_id: trace }), 5000));
    expect(tool).toMatchObject({ status: 400, code: 'RFT_ERR_BODY_TOO_DEEP' });
    for (const path of ['/graders/exact', '/grade']) {
      const grade = await post(path, withDeepItem({ sample: { output_text: 'a' }, trace_id: trace }, 5000));
      expect(grade).toMatchObject({ status: 400, code: 'RFT_ERR_BODY_TOO_DEEP' });
    }
    expect((await fetch(`${d.url}/v1/rollouts/${trace}`, { headers: bearer(d.key) })).status).toBe(404);
  });

  it('grades a sample whose output_json (the model\'s answer) nests 50,000 levels deep, with output_json cut to null', async () => {
    const trace = newTrace();
    const deepAnswer = '['.repeat(50_000) + ']'.repeat(50_000);
    const body = `{"sample":{"output_text":"4.2","output_json":${deepAnswer}},"item":{"reference_answer":"4.2"},"trace_id":"${trace}"}`;
    const r = await post('/graders/exact', body);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ score: 1 });
    const rec = (await (await fetch(`${d.url}/v1/rollouts/${trace}`, { headers: bearer(d.key) })).json()) as { grades: { sample: unknown }[] };
    expect(rec.grades[0]!.sample).toMatchObject({ output_text: '4.2', output_json: null });
    // The same depth anywhere else in a grade is still refused.
    const deepItem = await post('/graders/exact', `{"sample":{"output_text":"4.2"},"item":{"x":${deepAnswer}},"trace_id":"${trace}"}`);
    expect(deepItem).toMatchObject({ status: 400, code: 'RFT_ERR_BODY_TOO_DEEP' });
  });

  it('accepts an item at the limit', async () => {
    expect((await post('/tools', withDeepItem(functionCall('echo', { text: 'x' }), 63))).status).toBe(200);
    expect((await post('/tools', withDeepItem(functionCall('echo', { text: 'x' }), 64))).code).toBe('RFT_ERR_BODY_TOO_DEEP');
  });

  it('tells the model, as an observation, that its arguments nest too deep', async () => {
    const r = await post('/tools', JSON.stringify(functionCall('echo', '['.repeat(5000) + ']'.repeat(5000))));
    expect(r.status).toBe(200);
    expect((JSON.parse(r.text) as { output: string }).output).toMatch(/^Error: arguments nest arrays and objects more than 64 levels deep/);
  });
});

describe('shutting down', () => {
  it('answers a request that arrives on an open connection while the server drains 503 in our shape', async () => {
    const d = await startFixtureServer({});
    // The first call runs until the test opens its gate, once the second request has reached the
    // server (a first call of a fixed 800 ms could end first on a loaded machine, and the drained
    // connection then closed before the second request was read).
    const finish = gate();
    const slow = functionCall('echo', { text: 'finishing', wait_for: finish.path });
    const next = JSON.stringify(functionCall('echo', { text: 'too late' }));
    const body = JSON.stringify(slow);
    const head = (len: number) => `POST /tools HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${d.key}\r\nContent-Type: application/json\r\nContent-Length: ${len}\r\n\r\n`;
    let received = 0;
    d.app.server.on('request', () => received++);
    const socket = await open(d.url);
    let data = '';
    socket.on('data', (b: Buffer) => (data += b.toString()));
    socket.write(head(Buffer.byteLength(body)) + body);
    await expect.poll(() => runs.get(slow.trace_id), { timeout: 10_000 }).toBe(1);
    const closing = d.close();
    // A second request on the same connection while the first still runs and the server drains
    // (it stops listening after its preClose hooks ran).
    await expect.poll(() => d.app.server.listening, { timeout: 10_000 }).toBe(false);
    socket.write(head(Buffer.byteLength(next)) + next);
    await expect.poll(() => received, { timeout: 10_000 }).toBe(2);
    expect(data).toBe(''); // the first still runs
    finish.open();
    await expect.poll(() => (data.match(/HTTP\/1\.1 /g) ?? []).length, { timeout: 10_000 }).toBe(2);
    const second = data.slice(data.lastIndexOf('HTTP/1.1 '));
    const first = data.slice(0, data.lastIndexOf('HTTP/1.1 '));
    expect(parseReply(first)?.status).toBe(200);
    const r = parseReply(second)!;
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body).error.code).toBe('RFT_ERR_SHUTTING_DOWN');
    socket.destroy();
    await closing;
  });
});
