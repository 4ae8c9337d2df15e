import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, functionCall, newTrace, startFixtureServer } from '../../helpers/fixtures.js';
import type { TestServer } from '../../helpers/server.js';
import { runs } from '../../fixtures/units/tools/echo.js';
import { aborted } from '../../fixtures/units/tools/hang.js';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ listen: false, env: { RFT_TOOL_BUDGET: '10' } });
});
afterAll(() => s.close());

const post = (url: string, payload: unknown) => s.app.inject({ method: 'POST', url, headers: bearer(s.key), payload: payload as object });

describe('POST /tools', () => {
  it('answers a function_call with a function_call_output carrying the same ids', async () => {
    const call = functionCall('echo', { text: 'hello' });
    const res = await post('/tools', call);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ type: 'function_call_output', call_id: call.call_id, id: call.id, output: 'hello' });
  });

  it('dispatches on the URL name too, and accepts arguments as an object', async () => {
    const call = { ...functionCall('echo', {}), arguments: { text: 'obj' } };
    delete (call as Record<string, unknown>).name;
    const res = await post('/tools/echo', call);
    expect(res.json().output).toBe('obj');
  });

  it('serializes a non-string result as JSON and lets the tool see the rollout so far', async () => {
    const trace = newTrace();
    await post('/tools', functionCall('echo', { text: 'a' }, { trace_id: trace }));
    const res = await post('/tools', functionCall('json_result', { n: 21 }, { trace_id: trace }));
    expect(JSON.parse(res.json().output)).toEqual({ doubled: 42, budget: { used: 3, limit: 10, exceeded: false }, previous: 1 });
  });

  it('answers 404 naming the known tools for an unknown tool', async () => {
    const res = await post('/tools', functionCall('nope', {}));
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('RFT_ERR_UNKNOWN_TOOL');
    expect(res.json().error.details.known_tools).toContain('echo');
  });

  it('answers 400 for a malformed body', async () => {
    const res = await post('/tools', { name: 'echo', arguments: '{}' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('RFT_ERR_BAD_REQUEST');
    expect(res.json().error.message).toMatch(/call_id/);
  });

  it('answers 400 for a body that is not JSON', async () => {
    const res = await s.app.inject({ method: 'POST', url: '/tools', headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: '{"call_id":' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('RFT_ERR_BAD_REQUEST');
  });

  it('refuses a body carrying a __proto__ key with 400', async () => {
    const body = JSON.stringify(functionCall('echo', { text: 'x' })).replace('{', '{"__proto__":{"polluted":true},');
    const res = await s.app.inject({ method: 'POST', url: '/tools', headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: body });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('RFT_ERR_BAD_REQUEST');
  });

  it('refuses a __proto__ key spelled with \\u escapes too, and accepts escapes elsewhere', async () => {
    const body = JSON.stringify(functionCall('echo', { text: 'x' })).replace('{', '{"\\u005f_proto__":{"polluted":true},');
    const bad = await s.app.inject({ method: 'POST', url: '/tools', headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: body });
    expect(bad.statusCode).toBe(400);
    // Python's json.dumps escapes non-ASCII by default: such a body is an ordinary call.
    const escaped = JSON.stringify(functionCall('echo', { text: 'caf\u00e9' })).replace('caf\u00e9', 'caf\\\\u00e9');
    const ok = await s.app.inject({ method: 'POST', url: '/tools', headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: escaped });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().output).toBe('caf\u00e9');
  });

  it('answers invalid JSON arguments with 200 and a readable output, without running the tool', async () => {
    const call = functionCall('echo', '{"text": "unterminated');
    const res = await post('/tools', call);
    expect(res.statusCode).toBe(200);
    expect(res.json().output).toMatch(/^Error: arguments are not valid JSON/);
    expect(runs.get(call.trace_id)).toBeUndefined();
  });

  it('answers a schema violation with 200 and zod issues in plain words', async () => {
    const res = await post('/tools', functionCall('echo', { text: 5 }));
    expect(res.statusCode).toBe(200);
    expect(res.json().output).toMatch(/invalid arguments for "echo": text: .*string/i);
  });

  it('turns a throwing handler into an output the model reads, and records it', async () => {
    const call = functionCall('fail', {});
    const res = await post('/tools', call);
    expect(res.statusCode).toBe(200);
    expect(res.json().output).toBe('Error: no such document: q3.pdf');
    const rec = await s.app.inject({ method: 'GET', url: `/v1/rollouts/${call.trace_id}`, headers: bearer(s.key) });
    expect(rec.json().calls[0]).toMatchObject({ call_id: call.call_id, status: 'tool_error', output: 'Error: no such document: q3.pdf' });
  });

  it('times a hanging handler out, aborts its signal and records a timeout', async () => {
    const call = functionCall('hang', {});
    const res = await post('/tools', call);
    expect(res.statusCode).toBe(200);
    expect(res.json().output).toMatch(/timed out after 200 ms/);
    expect(aborted).toContain(call.call_id);
    const rec = await s.app.inject({ method: 'GET', url: `/v1/rollouts/${call.trace_id}`, headers: bearer(s.key) });
    expect(rec.json().calls[0].status).toBe('timeout');
  });

  it('caps a long output with a marker giving the original size', async () => {
    const res = await post('/tools', functionCall('big', { bytes: 5000 }));
    const out: string = res.json().output;
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(1024);
    expect(out).toMatch(/\[output truncated: 5000 bytes, showing the first 1024\]$/);
  });

  it('answers 413 with a code for a body over 1 MB', async () => {
    const call = functionCall('echo', { text: 'x' }, { item: { blob: 'y'.repeat(1_100_000) } });
    const res = await post('/tools', call);
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('RFT_ERR_BODY_TOO_LARGE');
  });
});
