// Test access to the Postgres of .ci/setup-postgres.sh: a reachability probe for describeIf, and
// stores in their own random schema, dropped when the test ends.
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { onTestFinished } from 'vitest';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres.js';

export const databaseUrl = process.env.RFT_TEST_DATABASE_URL ?? 'postgres://rft:rft@127.0.0.1:5432/rft';

/** Why Postgres cannot be used, or undefined when it can. */
export async function postgresUnavailable(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (e) {
    return `cannot connect to ${databaseUrl.replace(/:[^:@/]*@/, ':***@')} (${(e as Error).message}); run .ci/setup-postgres.sh`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export const randomSchema = () => `rft_test_${randomBytes(6).toString('hex')}`;

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** A schema that is dropped after the current test (after the stores using it are closed). */
export function testSchema(): string {
  const schema = randomSchema();
  onTestFinished(() => dropSchema(schema));
  return schema;
}

/** A store (one replica) on the given schema, closed after the current test. */
export async function openStore(schema: string, over: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
  const store = await PostgresStore.open({ url: databaseUrl, schema, instanceId: `replica_${randomBytes(3).toString('hex')}`, poolSize: 5, ...over });
  onTestFinished(() => store.close());
  return store;
}
