// Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
// `${id}.${timestamp}.${body}`, base64, sent as a space-separated list of `v1,<sig>`.
// The headers are checked before the body is read (checkWebhookHeaders); only the HMAC needs it.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { errors } from '../errors.js';

export const WEBHOOK_TOLERANCE_S = 300;
/** Longest webhook-id kept (the store remembers ids); the standard's ids are ~30 characters. */
export const WEBHOOK_ID_MAX = 256;
/** Most `v1,` entries looked at in one header (each costs an HMAC comparison per secret). */
const MAX_SIGNATURES = 16;

/** Decodes a `whsec_<base64>` secret to its key bytes; any other string is used as raw UTF-8 bytes. */
export function secretKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

function hmac(key: Buffer, msgId: string, timestampS: number | string, body: string | Buffer): Buffer {
  return createHmac('sha256', key)
    .update(`${msgId}.${timestampS}.`)
    .update(body)
    .digest();
}

export function signWebhook(secret: string, msgId: string, timestampS: number, body: string | Buffer): string {
  return `v1,${hmac(secretKey(secret), msgId, timestampS, body).toString('base64')}`;
}

export interface WebhookHeaders {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

/** Headers that passed every check but the HMAC, which needs the body. */
export interface CheckedWebhook {
  id: string;
  timestamp: string;
  candidates: Buffer[];
}

/** Checks what can be checked without the body; throws a coded 401 for each failure. */
export function checkWebhookHeaders(h: WebhookHeaders, nowS: number): CheckedWebhook {
  if (!h.id || !h.timestamp || !h.signature) throw errors.signatureInvalid('missing webhook-id, webhook-timestamp or webhook-signature');
  // Printable ASCII only: the id is stored and shown in errors.
  if (h.id.length > WEBHOOK_ID_MAX || !/^[\x21-\x7e]+$/.test(h.id)) {
    throw errors.signatureInvalid(`webhook-id must be 1-${WEBHOOK_ID_MAX} printable ASCII characters`);
  }
  if (!/^\d{1,12}$/.test(h.timestamp)) throw errors.signatureTimestamp('is not a unix time in seconds');
  const ts = Number(h.timestamp);
  if (nowS - ts > WEBHOOK_TOLERANCE_S) throw errors.signatureTimestamp('is too old');
  if (ts - nowS > WEBHOOK_TOLERANCE_S) throw errors.signatureTimestamp('is too far in the future');
  const candidates: Buffer[] = [];
  for (const part of h.signature.split(' ')) {
    const [version, sig] = part.split(',', 2);
    if (version === 'v1' && sig) candidates.push(Buffer.from(sig, 'base64'));
    if (candidates.length === MAX_SIGNATURES) break;
  }
  if (candidates.length === 0) throw errors.signatureInvalid('no v1 signature');
  return { id: h.id, timestamp: h.timestamp, candidates };
}

/** The index of the key whose HMAC over the body matches one candidate; throws a coded 401 otherwise. */
export function verifyWebhookBody(keys: readonly Buffer[], w: CheckedWebhook, body: Buffer): number {
  for (let k = 0; k < keys.length; k++) {
    const expected = hmac(keys[k]!, w.id, w.timestamp, body);
    // Check every candidate without an early exit on the first mismatch.
    let match = false;
    for (const c of w.candidates) {
      if (c.length === expected.length && timingSafeEqual(c, expected)) match = true;
    }
    if (match) return k;
  }
  throw errors.signatureInvalid('no signature matches');
}

/**
 * Verifies the headers against every key; returns the index of the key that matched.
 * Throws a coded 401 for each failure so the caller can tell them apart.
 */
export function verifyWebhook(keys: readonly Buffer[], h: WebhookHeaders, body: Buffer, nowS: number): number {
  return verifyWebhookBody(keys, checkWebhookHeaders(h, nowS), body);
}
