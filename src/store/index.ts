// Builds the configured store: SQLite in the data dir (one process), or Postgres (many replicas).
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { AppConfig } from '../config.js';
import { PostgresStore } from './postgres.js';
import { SqliteStore } from './sqlite.js';
import type { Store } from './types.js';

export interface CreateStoreOptions {
  /** Where idle Postgres connection errors go (the database restarted ...). */
  onIdleError?: (e: Error) => void;
  /** Where the store says what it does on its own (the replicas' liveness lock). */
  log?: Logger;
}

export async function createStore(config: AppConfig, instanceId: string, opts: CreateStoreOptions = {}): Promise<Store> {
  const c = config.store;
  if (c.kind === 'postgres') {
    return PostgresStore.open({
      url: c.url,
      schema: c.schema,
      poolSize: c.poolSize,
      instanceId,
      ...(opts.onIdleError ? { onIdleError: opts.onIdleError } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
  }
  return new SqliteStore({ path: join(config.dataDir, 'rft.sqlite'), sync: c.sync });
}

export type { Store } from './types.js';
