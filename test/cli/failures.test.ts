// Every command fails clearly: one line `error RFT_ERR_...: message`, the documented exit status
// (src/cli/exit-codes.ts, README "Exit codes"), no stack trace.
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { removeTempDirs, runCli, tempDir, writeJsonl, type CliResult } from './harness.js';

let server: TestServer;
let closedUrl: string;
let holder: Server;
let heldPort: number;
let dataset: string;

beforeAll(async () => {
  server = await startTestServer();
  // A port nothing listens on: bind it, note it, close it.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  closedUrl = `http://127.0.0.1:${(probe.address() as { port: number }).port}`;
  await new Promise<void>((r) => probe.close(() => r()));
  holder = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  heldPort = (holder.address() as { port: number }).port;
  dataset = join(tempDir(), 'rows.jsonl');
  writeJsonl(dataset, [{ messages: [{ role: 'user', content: 'hi' }] }]);
});

afterAll(async () => {
  await server.close();
  await new Promise<void>((r) => holder.close(() => r()));
  removeTempDirs();
});

/** One line, coded, no stack trace. */
function expectOneCodedLine(r: CliResult, code: string, status: number): void {
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines.at(-1), r.stderr).toMatch(new RegExp(`^error ${code}: \\S`));
  expect(r.stderr).not.toMatch(/^\s+at /m);
  expect(r.code, r.stderr).toBe(status);
}

const model = ['--model', 'm', '--base-url', 'http://127.0.0.1:9/v1'];

describe('the CLI fails clearly', () => {
  it('server unreachable: exit 3, RFT_ERR_SERVER_UNREACHABLE, for every command that talks to a server', async () => {
    const runs = await Promise.all([
      runCli(['rollout', '--dataset', dataset, '--server', closedUrl, '--key', 'k', ...model]),
      runCli(['replay', 'trace_x', '--server', closedUrl, '--key', 'k']),
      runCli(['regrade', '--server', closedUrl, '--key', 'k']),
      runCli(['export', '--server', closedUrl, '--key', 'k']),
      runCli(['dataset', 'check', dataset, '--server', closedUrl, '--key', 'k']),
    ]);
    for (const r of runs) {
      expectOneCodedLine(r, 'RFT_ERR_SERVER_UNREACHABLE', 3);
      expect(r.stderr).toContain(`${closedUrl} (ECONNREFUSED)`);
    }
  }, 120_000);

  it('NeMo Gym door unreachable: exit 3, RFT_ERR_SERVER_UNREACHABLE naming --door-url, not --server', async () => {
    const r = await runCli(['rollout', '--dataset', dataset, '--server', server.url, '--key', server.key, ...model, '--door', 'nemo-gym', '--door-url', closedUrl, '--out', join(tempDir(), 'r.jsonl')]);
    expectOneCodedLine(r, 'RFT_ERR_SERVER_UNREACHABLE', 3);
    expect(r.stderr).toContain(`${closedUrl} (connect ECONNREFUSED`);
    expect(r.stderr).toContain('(--door-url URL: the NeMo Gym listener');
    expect(r.stderr).not.toContain('--server');
  }, 60_000);

  it('bad key: exit 3, RFT_ERR_SERVER_AUTH naming the server\'s code, before any work', async () => {
    const out = join(tempDir(), 'results.jsonl');
    const runs = await Promise.all([
      runCli(['rollout', '--dataset', dataset, '--server', server.url, '--key', 'wrong-key-0123456789', ...model, '--out', out]),
      runCli(['regrade', '--server', server.url, '--key', 'wrong-key-0123456789']),
      runCli(['export', '--server', server.url]),
      runCli(['dataset', 'check', dataset, '--server', server.url, '--key', 'wrong-key-0123456789']),
    ]);
    for (const r of runs) expectOneCodedLine(r, 'RFT_ERR_SERVER_AUTH', 3);
    expect(runs[0]!.stderr).toContain('(RFT_ERR_AUTH_INVALID)');
    expect(runs[2]!.stderr).toContain('(RFT_ERR_AUTH_MISSING)');
  }, 120_000);

  it('bad file: exit 2, RFT_ERR_FILE naming the path', async () => {
    const missing = join(tempDir(), 'nope.jsonl');
    const runs = await Promise.all([
      runCli(['rollout', '--dataset', missing, '--server', server.url, '--key', server.key, ...model]),
      runCli(['report', missing]),
      runCli(['import', missing, '--server', server.url, '--key', server.key]),
      runCli(['check-grader', '--dataset', missing, '--grader', 'answer_match']),
      runCli(['dataset', 'check', missing]),
    ]);
    for (const r of runs) {
      expectOneCodedLine(r, 'RFT_ERR_FILE', 2);
      expect(r.stderr).toContain(missing);
    }
  }, 120_000);

  it('port in use: serve exits 5 with RFT_ERR_PORT_IN_USE', async () => {
    const r = await runCli(['serve', '--port', String(heldPort), '--host', '127.0.0.1'], { RFT_DATA_DIR: tempDir(), RFT_SANDBOX: 'none', RFT_LOG_LEVEL: 'silent' });
    expectOneCodedLine(r, 'RFT_ERR_PORT_IN_USE', 5);
    expect(r.stderr).toContain(`127.0.0.1:${heldPort} is already in use`);
  }, 60_000);

  it('a door listener refused off loopback: serve exits 5 (configuration), not 70 (a bug)', async () => {
    const env = { RFT_DATA_DIR: tempDir(), RFT_SANDBOX: 'none', RFT_LOG_LEVEL: 'silent' };
    const [gym, priv] = await Promise.all([
      runCli(['serve', '--port', '0', '--host', '127.0.0.1'], { ...env, RFT_NEMO_GYM_PORT: '0', RFT_NEMO_GYM_HOST: '0.0.0.0' }),
      runCli(['serve', '--port', '0', '--host', '127.0.0.1'], { ...env, RFT_DATA_DIR: tempDir(), RFT_PRIVATE_PORT: '0', RFT_PRIVATE_HOST: '0.0.0.0' }),
    ]);
    expectOneCodedLine(gym, 'RFT_ERR_NEMO_GYM_REMOTE', 5);
    expectOneCodedLine(priv, 'RFT_ERR_PRIVATE_REMOTE', 5);
  }, 60_000);

  it('rollout with no model endpoint named: exit 2, RFT_ERR_MODEL_CONFIG, before the first row (no silent default address)', async () => {
    const out = join(tempDir(), 'results.jsonl');
    const r = await runCli(['rollout', '--dataset', dataset, '--server', server.url, '--key', server.key, '--model', 'm', '--out', out]);
    expectOneCodedLine(r, 'RFT_ERR_MODEL_CONFIG', 2);
    expect(r.stdout).toBe('');
  }, 60_000);

  it('bad usage: exit 2, RFT_ERR_CLI_USAGE; --version and --help answer with 0', async () => {
    const [unknown, missing, version, help, typo, nestedTypo] = await Promise.all([
      runCli(['rollout', '--no-such-option']),
      runCli(['rollout']),
      runCli(['--version']),
      runCli(['--help']),
      runCli(['rollout', '--datset', dataset, '--model', 'm']),
      runCli(['dataset', 'check', dataset, '--grder', 'x']),
    ]);
    expectOneCodedLine(unknown, 'RFT_ERR_CLI_USAGE', 2);
    expectOneCodedLine(missing, 'RFT_ERR_CLI_USAGE', 2);
    // A typo is named as an unknown option (with commander's suggestion), not as the required option it missed.
    expectOneCodedLine(typo, 'RFT_ERR_CLI_USAGE', 2);
    expect(typo.stderr).toContain("error RFT_ERR_CLI_USAGE: unknown option '--datset' (Did you mean --dataset?)\n");
    expect(typo.stderr.match(/add --help for usage/g)).toHaveLength(1);
    expectOneCodedLine(nestedTypo, 'RFT_ERR_CLI_USAGE', 2);
    expect(nestedTypo.stderr).toContain("unknown option '--grder' (Did you mean --grader?)");
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/init \[options\] <dir>/);
    expect(help.stdout).toMatch(/dataset/);
  }, 60_000);
});
