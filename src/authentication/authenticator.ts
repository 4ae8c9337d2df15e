// Who is calling: a static key (what the hosted trainer forwards in the job's `headers`) or a
// Standard Webhooks signature (our CLI, custom trainers, proxies). Every failure is a coded 401.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errors } from '../errors.js';
import type { Store } from '../store/types.js';
import { secretKey, verifyWebhook, WEBHOOK_TOLERANCE_S } from './webhooks.js';

export interface Credential {
  label: string;
  method: 'key' | 'signature';
}

const digest = (s: string | Buffer) => createHash('sha256').update(s).digest();

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export class Authenticator {
  private readonly keys: { label: string; digest: Buffer }[];
  private readonly secrets: Buffer[];
  /**
   * Keys already verified, by value: at most one entry per configured key, so a miss (any wrong
   * key) always takes the constant-time path, and a hit only says what the 200 would say anyway.
   * It saves a SHA-256 per request on the hot path.
   */
  private readonly verified = new Map<string, string>();

  constructor(
    keys: readonly { label: string; key: string }[],
    secrets: readonly string[],
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {
    this.keys = keys.map((k) => ({ label: k.label, digest: digest(k.key) }));
    this.secrets = secrets.map(secretKey);
  }

  get configured(): boolean {
    return this.keys.length + this.secrets.length > 0;
  }

  /**
   * The caller's credential, or a coded 401 thrown. A key is checked synchronously (no promise on
   * the hot path); a signature returns a promise, since its webhook-id is recorded in the store.
   */
  authenticate(headers: Record<string, string | string[] | undefined>, rawBody: Buffer | undefined): Credential | Promise<Credential> {
    const signature = header(headers, 'webhook-signature');
    if (signature !== undefined && this.secrets.length > 0) {
      const id = header(headers, 'webhook-id');
      const nowMs = this.now();
      let k: number;
      try {
        k = verifyWebhook(this.secrets, { id, timestamp: header(headers, 'webhook-timestamp'), signature }, rawBody ?? Buffer.alloc(0), Math.floor(nowMs / 1000));
      } catch (e) {
        return Promise.reject(e as Error);
      }
      return this.rememberSignature(id!, k, nowMs);
    }
    const auth = header(headers, 'authorization');
    if (auth === undefined) {
      if (signature !== undefined) throw errors.signatureInvalid('this server has no signing secret configured');
      throw errors.authMissing();
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (!m) throw errors.authInvalid();
    const token = m[1]!;
    const known = this.verified.get(token);
    if (known !== undefined) return { label: known, method: 'key' };
    const presented = digest(token);
    // Compare against every key (no early exit), digests have equal length.
    let found: string | undefined;
    for (const k of this.keys) {
      if (timingSafeEqual(presented, k.digest) && found === undefined) found = k.label;
    }
    if (found === undefined) throw errors.authInvalid();
    this.verified.set(token, found);
    return { label: found, method: 'key' };
  }

  private async rememberSignature(id: string, k: number, nowMs: number): Promise<Credential> {
    // Remember the id for twice the tolerance: a replay is rejected for as long as its timestamp could pass.
    const fresh = await this.store.rememberWebhookId(id, nowMs + 2 * WEBHOOK_TOLERANCE_S * 1000, nowMs);
    if (!fresh) throw errors.signatureReplay(id);
    return { label: `signing-secret-${k + 1}`, method: 'signature' };
  }
}

export function generateKey(): string {
  return `rft_${randomBytes(24).toString('base64url')}`;
}

/** The key kept in the data dir when no credential is configured; created (and announced) once. */
export function loadOrCreateLocalKey(dataDir: string): { key: string; created: boolean; path: string } {
  const path = join(dataDir, 'api-key');
  if (existsSync(path)) return { key: readFileSync(path, 'utf8').trim(), created: false, path };
  mkdirSync(dataDir, { recursive: true });
  const key = generateKey();
  writeFileSync(path, key + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return { key, created: true, path };
}
