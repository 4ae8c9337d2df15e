// Who is calling: a static key (what the hosted trainer forwards in the job's `headers`) or a
// Standard Webhooks signature (our CLI, custom trainers, proxies). Every failure is a coded 401.
//
// Two steps, so a request is refused before its body is read whenever the headers suffice:
// fromHeaders() checks a key completely, and a signature's headers (timestamp, id, form);
// verifyBody() then checks a signature's HMAC over the raw body and records its webhook-id.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { errors } from '../errors.js';
import type { Store } from '../store/types.js';
import { localKeyPath } from './boot-note.js';
import { describeKeyHeaders, keyFromHeader, keyHeaders, type KeyHeader } from './key-headers.js';
import { checkWebhookHeaders, secretKey, verifyWebhookBody, WEBHOOK_TOLERANCE_S, type CheckedWebhook } from './webhooks.js';

export interface Credential {
  label: string;
  method: 'key' | 'signature';
}

/** A signature whose headers passed; its HMAC waits for the body. */
export interface PendingSignature {
  method: 'pending-signature';
  webhook: CheckedWebhook;
  atMs: number;
}

type Headers = Record<string, string | string[] | undefined>;

const digest = (s: string | Buffer) => createHash('sha256').update(s).digest();

function header(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export interface AuthenticatorOptions {
  /** Headers a static key is read from, in order (default: Authorization). */
  keyHeaders?: readonly string[];
  now?: () => number;
}

export class Authenticator {
  private readonly keys: { label: string; digest: Buffer }[];
  private readonly secrets: Buffer[];
  readonly keyHeaders: KeyHeader[];
  private readonly now: () => number;
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
    opts: AuthenticatorOptions = {},
  ) {
    this.keys = keys.map((k) => ({ label: k.label, digest: digest(k.key) }));
    this.secrets = secrets.map(secretKey);
    this.keyHeaders = keyHeaders(opts.keyHeaders ?? ['Authorization']);
    this.now = opts.now ?? Date.now;
  }

  get configured(): boolean {
    return this.keys.length + this.secrets.length > 0;
  }

  /**
   * Everything the headers can decide: a key's credential, or a signature still to be checked
   * over the body. Throws a coded 401.
   */
  fromHeaders(headers: Headers, extra?: KeyHeader): Credential | PendingSignature {
    const signature = header(headers, 'webhook-signature');
    if (signature !== undefined && this.secrets.length > 0) {
      const nowMs = this.now();
      const webhook = checkWebhookHeaders(
        { id: header(headers, 'webhook-id'), timestamp: header(headers, 'webhook-timestamp'), signature },
        Math.floor(nowMs / 1000),
      );
      return { method: 'pending-signature', webhook, atMs: nowMs };
    }
    const presented = this.presentedKey(headers, extra);
    if (presented === undefined) {
      if (signature !== undefined) throw errors.signatureInvalid('this server has no signing secret configured');
      throw errors.authMissing(this.expected());
    }
    if (presented === null) throw errors.authInvalid();
    const known = this.verified.get(presented);
    if (known !== undefined) return { label: known, method: 'key' };
    const d = digest(presented);
    // Compare against every key (no early exit), digests have equal length.
    let found: string | undefined;
    for (const k of this.keys) {
      if (timingSafeEqual(d, k.digest) && found === undefined) found = k.label;
    }
    if (found === undefined) throw errors.authInvalid();
    this.verified.set(presented, found);
    return { label: found, method: 'key' };
  }

  /**
   * Checks a pending signature over the raw body and records its webhook-id with the body's hash:
   * the same id with the same body is the sender's retry (accepted: the ledger and the grading
   * service answer it from the record); with another body it is refused.
   */
  async verifyBody(p: PendingSignature, rawBody: Buffer | undefined): Promise<Credential> {
    const body = rawBody ?? Buffer.alloc(0);
    const k = verifyWebhookBody(this.secrets, p.webhook, body);
    // Remember the id for twice the tolerance: a replay is judged for as long as its timestamp could pass.
    const accepted = await this.store.rememberWebhookId(p.webhook.id, digest(body).toString('hex'), p.atMs + 2 * WEBHOOK_TOLERANCE_S * 1000, p.atMs);
    if (!accepted) throw errors.signatureReplay(p.webhook.id);
    return { label: `signing-secret-${k + 1}`, method: 'signature' };
  }

  /** Both steps at once (callers that hold the body already). */
  authenticate(headers: Headers, rawBody: Buffer | undefined): Credential | Promise<Credential> {
    const r = this.fromHeaders(headers);
    return r.method === 'pending-signature' ? this.verifyBody(r, rawBody) : r;
  }

  /** true when the request carries a key this process has already accepted (no new comparison made). */
  carriesKnownKey(headers: Headers, extra?: KeyHeader): boolean {
    const presented = this.presentedKey(headers, extra);
    return typeof presented === 'string' && this.verified.has(presented);
  }

  /**
   * The key from the first configured header present (undefined: none present; null: present but
   * not of its form). Later headers are not consulted: one request, one credential. `extra` is a
   * route's own header (the ORS door's X-API-Key), taken after the configured ones.
   */
  private presentedKey(headers: Headers, extra?: KeyHeader): string | null | undefined {
    for (const h of extra ? [...this.keyHeaders, extra] : this.keyHeaders) {
      const v = header(headers, h.name);
      if (v !== undefined) return keyFromHeader(h, v) ?? null;
    }
    return undefined;
  }

  private expected(): string {
    return describeKeyHeaders(this.keyHeaders) + (this.secrets.length > 0 ? ' or a Standard Webhooks signature' : '');
  }
}

export function generateKey(): string {
  return `rft_${randomBytes(24).toString('base64url')}`;
}

/** The key kept in the data dir when no credential is configured; created (and announced) once. */
export function loadOrCreateLocalKey(dataDir: string): { key: string; created: boolean; path: string } {
  const path = localKeyPath(dataDir);
  if (existsSync(path)) return { key: readFileSync(path, 'utf8').trim(), created: false, path };
  mkdirSync(dataDir, { recursive: true });
  const key = generateKey();
  writeFileSync(path, key + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return { key, created: true, path };
}
