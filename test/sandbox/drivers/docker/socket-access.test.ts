// A Docker socket the server's user may not open: `serve` stops with a coded error that names the
// socket, the group that owns it and how to join it, instead of "driver docker is not available".
// The server runs as nobody (65534) without supplementary groups, so the socket (root:docker, 660
// here) refuses it as it refuses a user missing from the docker group.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { describeIf } from '../../../helpers/require.js';
import { repoRoot } from '../../../helpers/server.js';

const SOCKET = '/var/run/docker.sock';
const closedToOthers = existsSync(SOCKET) && (statSync(SOCKET).mode & 0o006) === 0;
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describeIf(closedToOthers && process.getuid?.() === 0, 'a Docker socket closed to the server', 'needs root (to run the server as nobody) and a Docker socket not open to others')('serve with a Docker socket it may not open', () => {
  it('stops with RFT_ERR_DOCKER_SOCKET_DENIED naming the socket and its group (exit 5)', async () => {
    const data = mkdtempSync(join(tmpdir(), 'rft-socket-denied-'));
    dirs.push(data);
    chmodSync(data, 0o777);
    const child = spawn(process.execPath, [join(repoRoot, 'bin/rft-endpoints.js'), 'serve'], {
      cwd: repoRoot,
      uid: 65534,
      gid: 65534,
      env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), RFT_SANDBOX: 'docker', RFT_DATA_DIR: data, HOST: '127.0.0.1', PORT: '0', RFT_LOG_LEVEL: 'fatal' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const gid = statSync(SOCKET).gid;
    const group = readFileSync('/etc/group', 'utf8').split('\n').map((l) => l.split(':')).find((f) => Number(f[2]) === gid)?.[0] ?? String(gid);
    expect(stderr).toContain('RFT_ERR_DOCKER_SOCKET_DENIED');
    expect(stderr).toContain(SOCKET);
    expect(stderr).toContain(`group "${group}"`);
    expect(stderr).toContain(`usermod -aG ${group}`);
    expect(code).toBe(5);
  }, 90_000);
});
