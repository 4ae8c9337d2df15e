import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { BeginCallInput } from '../../src/store/types.js';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
function open() {
  const dir = mkdtempSync(join(tmpdir(), 'rft-store-'));
  dirs.push(dir);
  const path = join(dir, 'db.sqlite');
  return { store: new SqliteStore({ path }), path };
}

const begin = (traceId: string, callId: string, over: Partial<BeginCallInput> = {}): BeginCallInput => ({
  traceId, callId, tool: 't', arguments: '{}', argsHash: 'h', cost: 1, budgetLimit: 5, item: { q: 1 }, credential: null, now: Date.now(), overBudgetOutput: 'spent', ...over,
});

describe('SqliteStore group commit', () => {
  it('has every write of a batch on disk, visible to another connection, once its promise resolves', async () => {
    const { store, path } = open();
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.beginCall(begin(`trace_${i % 3}`, `c${i}`))));
    const other = new Database(path, { readonly: true });
    expect(other.prepare('SELECT count(*) AS n FROM calls').get()).toEqual({ n: 20 });
    other.close();
    await store.close();
  });

  it('keeps a failed write out of the batch without losing the others', async () => {
    const { store } = open();
    const good = store.beginCall(begin('trace_a', 'c1'));
    const dup = { traceId: 'trace_b', createdAt: 1, updatedAt: 1, item: null, budget: { used: 0, limit: 5, exceeded: false }, grades: [],
      calls: [1, 1].map(() => ({ callId: 'same', seq: 1, tool: 't', arguments: '{}', argsHash: 'h', output: 'o', status: 'ok' as const, cost: 1, credential: null, startedAt: 1, finishedAt: 1, durationMs: 1, outputBytes: 1, truncated: false })) };
    const bad = store.importRollout(dup);
    const after = store.beginCall(begin('trace_a', 'c2'));
    await expect(bad).rejects.toThrow(/UNIQUE/);
    expect((await good).kind).toBe('started');
    expect((await after).kind).toBe('started');
    expect(await store.getRollout('trace_b')).toBeUndefined();
    expect((await store.listCalls('trace_a')).map((c) => c.callId)).toEqual(['c1', 'c2']);
    await store.close();
  });

  it('charges the budget atomically: a batch never admits more than the limit', async () => {
    const { store } = open();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => store.beginCall(begin('trace_x', `c${i}`))));
    expect(results.filter((r) => r.kind === 'started')).toHaveLength(5);
    expect(results.filter((r) => r.kind === 'over_budget')).toHaveLength(7);
    expect(await store.getBudget('trace_x', 0)).toEqual({ used: 5, limit: 5, exceeded: true });
    await store.close();
  });

  it('tells a replay from a conflicting reuse of a call id', async () => {
    const { store } = open();
    await store.beginCall(begin('trace_r', 'c1'));
    expect((await store.beginCall(begin('trace_r', 'c1'))).kind).toBe('existing');
    expect((await store.beginCall(begin('trace_r', 'c1', { argsHash: 'other' }))).kind).toBe('conflict');
    await store.close();
  });

  it('rejects a replayed webhook id until it expires', async () => {
    const { store } = open();
    expect(await store.rememberWebhookId('msg_1', 1000, 0)).toBe(true);
    expect(await store.rememberWebhookId('msg_1', 1000, 500)).toBe(false);
    expect(await store.rememberWebhookId('msg_1', 3000, 1500)).toBe(true);
    await store.close();
  });
});
