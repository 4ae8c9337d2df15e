import { describe, expect, it } from 'vitest';
import { secretKey, signWebhook, verifyWebhook } from '../../src/authentication/webhooks.js';
import { codeOf } from '../helpers/codes.js';

// The Standard Webhooks published test vector.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const TS = 1614265330;
const BODY = '{"test": 2432232314}';
const SIG = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';

describe('Standard Webhooks', () => {
  it('reproduces the published test vector', () => {
    expect(signWebhook(SECRET, ID, TS, BODY)).toBe(SIG);
  });

  it('verifies the published vector at its own time', () => {
    expect(verifyWebhook([secretKey(SECRET)], { id: ID, timestamp: String(TS), signature: SIG }, Buffer.from(BODY), TS)).toBe(0);
  });

  it('accepts 300 s either way and refuses 301', () => {
    const h = { id: ID, timestamp: String(TS), signature: SIG };
    const k = [secretKey(SECRET)];
    expect(verifyWebhook(k, h, Buffer.from(BODY), TS + 300)).toBe(0);
    expect(verifyWebhook(k, h, Buffer.from(BODY), TS - 300)).toBe(0);
    expect(codeOf(() => verifyWebhook(k, h, Buffer.from(BODY), TS + 301))).toBe('RFT_ERR_SIGNATURE_TIMESTAMP');
    expect(codeOf(() => verifyWebhook(k, h, Buffer.from(BODY), TS - 301))).toBe('RFT_ERR_SIGNATURE_TIMESTAMP');
  });

  it('refuses missing headers, a non-numeric timestamp and a wrong body', () => {
    const k = [secretKey(SECRET)];
    expect(codeOf(() => verifyWebhook(k, { id: ID, timestamp: String(TS), signature: undefined }, Buffer.from(BODY), TS))).toBe('RFT_ERR_SIGNATURE_INVALID');
    expect(codeOf(() => verifyWebhook(k, { id: ID, timestamp: 'soon', signature: SIG }, Buffer.from(BODY), TS))).toBe('RFT_ERR_SIGNATURE_TIMESTAMP');
    expect(codeOf(() => verifyWebhook(k, { id: ID, timestamp: String(TS), signature: SIG }, Buffer.from(BODY + ' '), TS))).toBe('RFT_ERR_SIGNATURE_INVALID');
  });
});
