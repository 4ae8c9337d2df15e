// The image's HEALTHCHECK: GET /healthz on this container's own port, HTTP or HTTPS as the server
// listens (RFT_TLS_CERT). Exit 0 when it answers 200 within 4 s, 1 otherwise. No dependencies, so it
// starts in a few tens of milliseconds.
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';

const tls = Boolean(process.env.RFT_TLS_CERT);
const port = Number(process.env.PORT || 8787);
// Loopback to our own listener: the certificate names the public host, not 127.0.0.1.
const req = (tls ? httpsGet : httpGet)({ host: '127.0.0.1', port, path: '/healthz', timeout: 4000, rejectUnauthorized: false }, (res) => {
  res.resume();
  process.exit(res.statusCode === 200 ? 0 : 1);
});
req.on('timeout', () => req.destroy(new Error('timeout')));
req.on('error', () => process.exit(1));
