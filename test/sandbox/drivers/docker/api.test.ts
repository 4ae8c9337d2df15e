// A Docker API error carries the engine's HTTP status and the path as fields (issue 23): callers
// (sandbox.ts: a gone or stopped container is a lost sandbox) decide on them, not on the message.
// The engine here is a real HTTP server on a unix socket answering as dockerd does on an error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerApi } from '../../../../src/sandbox/drivers/docker/api.js';

describe('DockerApi errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-dockerapi-'));
  const socketPath = join(dir, 'docker.sock');
  let server: Server;
  let api: DockerApi;

  beforeAll(async () => {
    // As dockerd answers: a JSON body with a message, the status by what was asked.
    server = createServer((req, res) => {
      const status = req.url?.includes('/exec') ? 409 : 404;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'container is not running (said with a 200 in it)' }));
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    api = new DockerApi({ url: `unix://${socketPath}`, socketPath });
  });
  afterAll(async () => {
    await api.close();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('a call answered with an unexpected status throws RFT_ERR_SANDBOX with dockerStatus and path', async () => {
    const e = await api.call('POST', '/containers/abc/exec?x=1', { Cmd: ['true'] }).catch((err: unknown) => err);
    expect(e).toMatchObject({ code: 'RFT_ERR_SANDBOX', statusCode: 500, dockerStatus: 409, path: '/containers/abc/exec' });
  });

  it('a stream answered with an error status does the same', async () => {
    const e = await api.stream('/containers/abc/archive?path=/workspace').catch((err: unknown) => err);
    expect(e).toMatchObject({ code: 'RFT_ERR_SANDBOX', dockerStatus: 404, path: '/containers/abc/archive' });
  });
});
