// A CLI command against an HTTPS server whose certificate this machine does not trust: a coded
// RFT_ERR_SERVER_TLS naming NODE_EXTRA_CA_CERTS, not "is it running?"; with the CA named there, the
// same command works (verification stays on).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { removeTempDirs, runCli, tempDir } from './harness.js';

let server: TestServer;
let cert: string;
let url: string;

beforeAll(async () => {
  const dir = tempDir('rft-tls-');
  cert = join(dir, 'cert.pem');
  selfSigned(dir, 'IP:127.0.0.1,DNS:localhost');
  server = await startFixtureServer({ env: { RFT_TLS_CERT: cert, RFT_TLS_KEY: join(dir, 'key.pem'), RFT_DEFAULT_GRADER: 'exact' } });
  url = server.url.replace(/^http:/, 'https:');
});

afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

it('names NODE_EXTRA_CA_CERTS when the certificate is not trusted, and works once it is', async () => {
  const args = ['job', 'body', '--server', url, '--key', server.key, '--json'];
  const refused = await runCli(args);
  expect(refused.code).toBe(3);
  expect(refused.stderr).toMatch(/^error RFT_ERR_SERVER_TLS: .*\(DEPTH_ZERO_SELF_SIGNED_CERT\).*NODE_EXTRA_CA_CERTS/);
  expect(refused.stderr).not.toContain('is it running');
  const trusted = await runCli(args, { NODE_EXTRA_CA_CERTS: cert });
  expect(trusted.code, trusted.stderr).toBe(0);
  expect(JSON.parse(trusted.stdout).openai.body.method.reinforcement.grader.name).toBe('exact');
}, 60_000);

it('says the certificate does not name the host when it names another', async () => {
  const dir = tempDir('rft-tls-');
  const other = join(dir, 'cert.pem');
  selfSigned(dir, 'DNS:rft.example.com');
  const named = await startFixtureServer({ env: { RFT_TLS_CERT: other, RFT_TLS_KEY: join(dir, 'key.pem') } });
  try {
    const r = await runCli(['job', 'body', '--server', named.url.replace(/^http:/, 'https:'), '--key', named.key], { NODE_EXTRA_CA_CERTS: other });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^error RFT_ERR_SERVER_TLS: .*\(ERR_TLS_CERT_ALTNAME_INVALID\).*--server/);
  } finally {
    await named.close();
  }
}, 60_000);

/** A self-signed certificate (its own CA) for these names, as cert.pem and key.pem in dir. */
function selfSigned(dir: string, names: string): void {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=rft-test', '-days', '1',
    '-addext', `subjectAltName=${names}`, '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
}
