// The ledger's handler outcomes, on a real SQLite store: sync and async results, throws and
// rejections, timeouts (a promise raced against the clock; a synchronous return always counts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEventListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { z } from 'zod';
import { defineTool } from '../../src/index.js';
import type { LoadedTool } from '../../src/registry/loader.js';
import { Ledger, serverWork } from '../../src/ledger/ledger.js';
import { errors } from '../../src/errors.js';
import type { ToolContext } from '../../src/registry/define.js';
import { SqliteStore } from '../../src/store/sqlite.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-ledger-'));
let store: SqliteStore;
let ledger: Ledger;
const shutdown = new AbortController();
beforeAll(() => {
  store = new SqliteStore({ path: join(dir, 'db.sqlite') });
  ledger = new Ledger({ store, sandboxes: undefined, defaultBudget: 10, defaultTimeoutMs: 100, defaultMaxOutputBytes: 1000, log: pino({ level: 'silent' }), shutdown: shutdown.signal });
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const tool = (name: string, handler: (args: { n?: number | undefined }, ctx: { signal: AbortSignal }) => unknown): LoadedTool => ({
  def: defineTool({ name, description: name, parameters: z.object({ n: z.number().optional() }), handler }),
  file: `${name}.ts`,
  parameters: {},
});
let k = 0;
const call = (t: LoadedTool, args: unknown = {}) =>
  ledger.call(t, { traceId: `trace_h${k}`, callId: `c${k++}`, arguments: JSON.stringify(args), item: {}, credential: null });

describe('ledger handler outcomes', () => {
  it('records a synchronous result, a resolved one, and JSON for non-strings', async () => {
    expect(await call(tool('sync', () => 'now'))).toMatchObject({ output: 'now', status: 'ok' });
    expect(await call(tool('async', async () => 'later'))).toMatchObject({ output: 'later', status: 'ok' });
    expect(await call(tool('obj', ({ n }) => ({ twice: (n ?? 0) * 2 })), { n: 4 })).toMatchObject({ output: '{"twice":8}', status: 'ok' });
  });

  it('records a throw and a rejection as tool_error with the message', async () => {
    expect(await call(tool('throws', () => { throw new Error('sync boom'); }))).toMatchObject({ output: 'Error: sync boom', status: 'tool_error' });
    expect(await call(tool('rejects', () => Promise.reject(new Error('async boom'))))).toMatchObject({ output: 'Error: async boom', status: 'tool_error' });
  });

  it('times out a promise that outlives the timeout and aborts the signal', async () => {
    let seen: AbortSignal | undefined;
    const slow = tool('slow', (_a, ctx) => {
      seen = ctx.signal;
      return new Promise((r) => setTimeout(() => r('too late'), 400));
    });
    expect(await call(slow)).toMatchObject({ status: 'timeout', output: 'Error: tool "slow" timed out after 100 ms.' });
    expect(seen?.aborted).toBe(true);
  });

  it('keeps the result of a synchronous handler that blocked past its timeout (no timer could fire first)', async () => {
    const blocking = tool('blocking', () => {
      const until = Date.now() + 150;
      while (Date.now() < until);
      return 'finished';
    });
    expect(await call(blocking)).toMatchObject({ status: 'ok', output: 'finished' });
  });

  it("does not count a start of what the tool runs on (serverWork) in its timeout, and still times the tool's own run after it", async () => {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const startsSlowly = tool('starts_slowly', async (_a, ctx) => {
      await serverWork(ctx as ToolContext, sleep(400));
      return 'started';
    });
    expect(await call(startsSlowly)).toMatchObject({ status: 'ok', output: 'started' });
    const hangsAfter = tool('hangs_after_start', async (_a, ctx) => {
      await serverWork(ctx as ToolContext, sleep(300));
      await sleep(2_000);
      return 'too late';
    });
    expect(await call(hangsAfter)).toMatchObject({ status: 'timeout', output: 'Error: tool "hangs_after_start" timed out after 100 ms.' });
  });

  it('un-begins a call whose start fails on our side: the 503 is answered, nothing recorded or charged', async () => {
    const failsToStart = tool('fails_to_start', (_a, ctx) => serverWork(ctx as ToolContext, Promise.reject(errors.toolStartTimeout('MCP server "x"', 300))));
    const traceId = `trace_h${k}`;
    const callId = `c${k}`;
    await expect(call(failsToStart)).rejects.toMatchObject({ code: 'RFT_ERR_TOOL_START_TIMEOUT', statusCode: 503 });
    expect(await store.getCall(traceId, callId)).toBeUndefined();
  });

  it('leaves no shutdown listener behind once calls that used the signal are done', async () => {
    const during: number[] = [];
    const uses = tool('uses_signal', (_a, ctx) => {
      const aborted = ctx.signal.aborted;
      during.push(getEventListeners(shutdown.signal, 'abort').length);
      return aborted ? 'aborted' : 'live';
    });
    await Promise.all(Array.from({ length: 5 }, () => call(uses)));
    expect(during.every((n) => n >= 1)).toBe(true);
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
    shutdown.abort(new Error('test shutdown'));
    expect(await call(uses)).toMatchObject({ output: 'aborted' });
  });
});
