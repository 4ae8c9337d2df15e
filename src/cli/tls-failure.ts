// A CLI command that cannot reach the server over HTTPS because of the certificate, told apart from a
// server that is not running: Node reports the TLS verdict as an OpenSSL code on the error (or its
// cause), and each code has its own fix. A private CA (Caddy's local CA, a company's) is the common
// case, which NODE_EXTRA_CA_CERTS solves without turning verification off.
import { errors, type RftError } from '../errors.js';

/** The chain does not lead to a CA this process trusts. */
const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
]);
const EXPIRED = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);
const WRONG_NAME = 'ERR_TLS_CERT_ALTNAME_INVALID';

/** A coded RFT_ERR_SERVER_TLS for a certificate failure, or undefined when `e` is another failure. */
export function tlsFailure(url: string, e: unknown): RftError | undefined {
  let cur = e as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; cur && depth < 5; depth++, cur = cur.cause as typeof cur) {
    const code = typeof cur.code === 'string' ? cur.code : undefined;
    if (code === undefined) continue;
    if (UNTRUSTED.has(code)) {
      return errors.serverTls(url, code, 'its certificate is not signed by a CA this machine trusts; if it is your own CA ' +
        "(Caddy's local CA, a company CA), point NODE_EXTRA_CA_CERTS at the CA's root certificate (PEM) and run again");
    }
    if (EXPIRED.has(code)) return errors.serverTls(url, code, 'its certificate is outside its validity dates (renew it, or check this clock)');
    if (code === WRONG_NAME) return errors.serverTls(url, code, 'its certificate does not name this host: use the name it was issued for in --server');
  }
  return undefined;
}
