// Owner ids (issue 26, item 5): every container of the server image has its data dir at /data, and
// the owner id of its sandboxes was derived from that path, so a second server on the same engine
// reaped the first one's live sandboxes at boot. Here two real `serve` processes reach two different
// data dirs through one path (a symlink repointed between their starts, as two containers' /data
// volumes are): the second must leave the first's sandbox alone, on every driver; and a restart of
// the first (kill -9) still reaps its own leftovers, because its id is kept in its data dir.
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { INSTANCE_ID_FILE, instanceIdFor } from '../../src/sandbox/instance-id.js';
import { postToolCall, spawnServer, type ChildServer } from '../helpers/child-server.js';
import { functionCall, newTrace } from '../helpers/fixtures.js';
import { describeIf } from '../helpers/require.js';
import { repoRoot } from '../helpers/server.js';
import { DOCKER_IMAGE, driversPresent, until } from './helpers.js';
import { dockerContainers, removeContainers } from '../helpers/run-label.js';
import { databaseUrl, dropSchema, postgresUnavailable, randomSchema } from '../store/postgres-db.js';

const KEY = 'owners-test-key-0123456789abcdef';
const base = mkdtempSync(join(tmpdir(), 'rft-owners-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('instanceIdFor', () => {
  it('is kept in the data dir: the same dir gives the same id, another dir at the same path a new one', () => {
    const dir = join(base, 'unit', 'data');
    const first = instanceIdFor(dir);
    expect(first).toMatch(/^rft-[0-9a-f]{12}$/);
    expect(readFileSync(join(dir, INSTANCE_ID_FILE), 'utf8').trim()).toBe(first);
    expect(instanceIdFor(dir)).toBe(first);
    renameSync(dir, join(base, 'unit', 'moved'));
    expect(instanceIdFor(join(base, 'unit', 'moved'))).toBe(first); // the dir's id, wherever it is now
    expect(instanceIdFor(dir)).not.toBe(first); // a new data dir at the old path
  });
});

const present = await driversPresent();

for (const driver of ['process', 'bwrap', 'docker'] as const) {
  describeIf(present[driver], `the ${driver} driver`, `${driver} sandbox driver not available`)(`two servers whose data dirs share a path (${driver})`, () => {
    it("never reap each other's live sandboxes; a restart still reaps its own", { timeout: 180_000 }, async () => {
      const root = mkdtempSync(join(base, `${driver}-`));
      await chmod(root, 0o711);
      const link = join(root, 'data'); // what both servers are told: RFT_DATA_DIR=/data in every container
      const start = async (target: string): Promise<ChildServer> => {
        rmSync(link, { force: true });
        symlinkSync(target, link);
        const s = await spawnServer(
          {
            RFT_DATA_DIR: link, RFT_API_KEYS: `t:${KEY}`, RFT_RATE_LIMIT: '0', RFT_SANDBOX: driver, RFT_SANDBOX_WARM: '0', RFT_SANDBOX_WARM_MAX_MB: '0', RFT_DOCKER_IMAGE: DOCKER_IMAGE,
            RFT_TOOLS_DIR: join(repoRoot, 'tools'), RFT_GRADERS_DIR: join(repoRoot, 'graders'), RFT_LOG_LEVEL: 'info',
          },
          120_000,
        );
        return s;
      };
      const shell = (s: ChildServer, trace: string, command: string) => postToolCall(s.url, KEY, functionCall('shell', { command }, { trace_id: trace }));

      const aDir = mkdtempSync(join(root, 'a-'));
      const a = await start(aDir);
      const trace = newTrace();
      expect(await shell(a, trace, 'echo kept > mine.txt')).toMatchObject({ status: 200 });
      const aId = readFileSync(join(link, INSTANCE_ID_FILE), 'utf8').trim();

      const b = await start(mkdtempSync(join(root, 'b-')));
      expect(readFileSync(join(link, INSTANCE_ID_FILE), 'utf8').trim()).not.toBe(aId);
      expect(b.stdout()).not.toMatch(/reaped sandboxes left by a previous run/);
      // The boot warning names the other live owner on the engine (a's running container).
      if (driver === 'docker') expect(b.stdout()).toContain(`another rft-endpoints server (owner ${aId})`);
      const again = await shell(a, trace, 'cat mine.txt');
      expect(again.status).toBe(200);
      expect(again.body.output).toContain('kept');

      // A crash of a, then its restart on its own data dir: its id is read back and its sandbox reaped.
      await a.stop('SIGKILL');
      const left = driver === 'docker' ? await dockerContainers([`rft-endpoints.trace_id=${trace}`]) : [];
      if (driver === 'docker') expect(left).toHaveLength(1);
      const sandboxesRoot = join(tmpdir(), 'rft-endpoints', aId);
      const workdirs = () => (existsSync(sandboxesRoot) ? readdirSync(sandboxesRoot).filter((n) => n.startsWith('sb_')) : []);
      if (driver !== 'docker') expect(workdirs()).toHaveLength(1);
      const restarted = await start(aDir);
      await until(async () => /reaped sandboxes left by a previous run/.test(restarted.stdout()), 30_000);
      if (driver === 'docker') expect(await dockerContainers([`rft-endpoints.trace_id=${trace}`])).toEqual([]);
      else expect(workdirs()).toEqual([]);
      await Promise.all([b.stop(), restarted.stop()]);
    });
  });
}

// Postgres replicas deliberately share engines (and sandboxes): a replica of the same store holding
// its liveness lock is no stranger, and its boot says nothing of it.
const pgMissing = present.docker ? await postgresUnavailable() : 'docker sandbox driver not available';
describeIf(pgMissing === undefined, 'Postgres and the docker driver', pgMissing ?? '')('replicas of one Postgres store on one engine', () => {
  const schema = randomSchema();
  afterAll(async () => {
    // Replica a is killed and never restarted, and its sandboxes are the other replicas' to remove once
    // idle past the TTL, which b and c do not live to see: its containers (the rollout's, and a warm
    // one when its pool made one) are removed here, whatever the test reached. They ran on until the
    // run's teardown before (one or two in most series runs).
    await removeContainers([`rft-endpoints.instance=own-a-${schema}`]);
    await dropSchema(schema);
  });

  it('warn of no live replica of their own store', { timeout: 180_000 }, async () => {
    const replica = async (id: string): Promise<ChildServer> =>
      spawnServer(
        {
          RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: schema, RFT_INSTANCE_ID: `${id}-${schema}`,
          RFT_DATA_DIR: mkdtempSync(join(base, `${id}-`)), RFT_API_KEYS: `t:${KEY}`, RFT_RATE_LIMIT: '0', RFT_SANDBOX: 'docker', RFT_DOCKER_IMAGE: DOCKER_IMAGE,
          RFT_TOOLS_DIR: join(repoRoot, 'tools'), RFT_GRADERS_DIR: join(repoRoot, 'graders'), RFT_LOG_LEVEL: 'info',
        },
        120_000,
      );
    const a = await replica('own-a');
    const trace = newTrace();
    expect(await postToolCall(a.url, KEY, functionCall('shell', { command: 'echo hi' }, { trace_id: trace }))).toMatchObject({ status: 200 });
    expect(await dockerContainers([`rft-endpoints.instance=own-a-${schema}`, `rft-endpoints.trace_id=${trace}`])).toHaveLength(1);
    const b = await replica('own-b');
    expect(b.stdout()).not.toContain(`(owner own-a-${schema})`);
    // A replica that is gone (its lock released) while its sandbox runs is a stranger again.
    await a.stop('SIGKILL');
    const c = await replica('own-c');
    expect(c.stdout()).toContain(`another rft-endpoints server (owner own-a-${schema})`);
    await Promise.all([b.stop(), c.stop()]);
  });
});
