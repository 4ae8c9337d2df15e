// A door's sessions in the record (Store.createSession ...), on SQLite and on Postgres: read back with
// their rollout's row by another store on the same database (a restart, another replica), changed by
// compare-and-set only, expired by last use.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { NewDoorSession, Store } from '../../src/store/types.js';
import { describeIf } from '../helpers/require.js';
import { openStore, postgresUnavailable, testSchema } from './postgres-db.js';

const unavailable = await postgresUnavailable();

const session = (id: string, over: Partial<NewDoorSession> = {}): NewDoorSession => ({
  door: 'nemo-gym', id, traceId: `ng_${id}`, environment: 'finqa', tools: ['search_docs'], run: 'run-1',
  state: JSON.stringify({ seq: 0 }), createdAt: 1_000, ...over,
});

/** Two stores on one database, the second opened after the first (SQLite: after it closed, as a restart). */
function contract(label: string, pair: () => Promise<[Store, () => Promise<Store>]>): void {
  describe(`${label}: door sessions`, () => {
    it('reads a session back, with its rollout row, from a store opened on the same database later', async () => {
      const [a, next] = await pair();
      await a.openRollout('ng_s1', 'nemo-gym', { question: 'q', sandbox: null }, 10, 1_000, 'run-1');
      await a.createSession(session('s1'));
      const b = await next();
      expect(await b.getSession('nemo-gym', 's1')).toEqual({
        door: 'nemo-gym', id: 's1', traceId: 'ng_s1', environment: 'finqa', tools: ['search_docs'], run: 'run-1',
        state: JSON.stringify({ seq: 0 }), version: 1, ended: false, createdAt: 1_000, lastUsed: 1_000, item: { question: 'q', sandbox: null },
      });
      expect(await b.getSession('ors', 's1')).toBeUndefined();
    });

    it('changes a session only from the version it was read at, once among concurrent changes', async () => {
      const [a, next] = await pair();
      await a.openRollout('ng_s2', 'nemo-gym', { q: 1 }, 10, 1_000);
      await a.createSession(session('s2'));
      const b = await next();
      const tries = await Promise.all([a, b, a, b].map((s, i) => s.updateSession('nemo-gym', 's2', 1, { state: JSON.stringify({ seq: i + 1 }) }, 2_000 + i)));
      expect(tries.filter(Boolean)).toHaveLength(1);
      const won = tries.indexOf(true);
      expect(await b.getSession('nemo-gym', 's2')).toMatchObject({ version: 2, state: JSON.stringify({ seq: won + 1 }), lastUsed: 2_000 + won, ended: false });
      expect(await a.updateSession('nemo-gym', 's2', 2, { state: '{"seq":9}', ended: true }, 3_000)).toBe(true);
      // ended is never unset
      expect(await b.updateSession('nemo-gym', 's2', 3, { state: '{"seq":10}' }, 3_001)).toBe(true);
      expect(await a.getSession('nemo-gym', 's2')).toMatchObject({ version: 4, state: '{"seq":10}', ended: true });
      expect(await a.updateSession('nemo-gym', 'gone', 1, { state: '{}' }, 3_002)).toBe(false);
      // a session whose rollout started after it records what the rollout was started with
      expect(await b.updateSession('nemo-gym', 's2', 4, { state: '{"seq":11}', bound: { environment: 'coding', tools: ['run', 'submit'] } }, 3_003)).toBe(true);
      expect(await a.getSession('nemo-gym', 's2')).toMatchObject({ environment: 'coding', tools: ['run', 'submit'], version: 5 });
      expect(await a.updateSession('nemo-gym', 's2', 5, { state: '{"seq":12}' }, 3_004)).toBe(true);
      expect(await b.getSession('nemo-gym', 's2')).toMatchObject({ environment: 'coding', tools: ['run', 'submit'], version: 6 });
    });

    it('expires sessions by last use, each returned once, and deletes one by id', async () => {
      const [a, next] = await pair();
      for (const [id, at] of [['old1', 1_000], ['old2', 2_000], ['new', 9_000]] as const) await a.createSession(session(id, { createdAt: at }));
      await a.createSession(session('ors-old', { door: 'ors', createdAt: 1_000 }));
      const b = await next();
      const expired = await Promise.all([a, b].map((s) => s.expireSessions('nemo-gym', 5_000, 100)));
      expect(expired.flat().map((s) => s.id).sort()).toEqual(['old1', 'old2']);
      expect(await b.getSession('nemo-gym', 'old1')).toBeUndefined();
      expect(await b.getSession('ors', 'ors-old')).toBeDefined();
      expect((await b.deleteSession('nemo-gym', 'new'))?.traceId).toBe('ng_new');
      expect(await a.deleteSession('nemo-gym', 'new')).toBeUndefined();
    });
  });
}

contract('SqliteStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-door-sessions-'));
  const path = join(dir, 'db.sqlite');
  // One process per database: the second store is the first one's restart, and from then on both names are it.
  let current: Store = new SqliteStore({ path });
  onTestFinished(async () => {
    await current.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const first = new Proxy({} as Store, {
    get: (_t, k) => {
      const v = (current as unknown as Record<string | symbol, unknown>)[k];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(current) : v;
    },
  });
  return [
    first,
    async () => {
      await current.close();
      current = new SqliteStore({ path });
      return current;
    },
  ];
});

describeIf(unavailable === undefined, 'Postgres', unavailable ?? '')('PostgresStore', () => {
  contract('PostgresStore', async () => {
    const schema = testSchema();
    const a = await openStore(schema);
    return [a, () => openStore(schema)];
  });
});
