// An engine that accepts connections and then never answers (a stopped dockerd: the kernel still
// queues connections on its socket): calls already running against it fail with ENGINE_DOWN as soon
// as it is marked down, instead of hanging with it. The engine here is a real unix socket server that
// reads requests and answers nothing.
import { describe, expect, it, onTestFinished } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerEngine } from '../../src/sandbox/docker-engine.js';

async function silentEngine(): Promise<DockerEngine> {
  const dir = mkdtempSync(join(tmpdir(), 'rft-engine-'));
  const socketPath = join(dir, 'docker.sock');
  const held: Socket[] = [];
  const server = createServer((sock) => void held.push(sock.on('data', () => {})));
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  const engine = new DockerEngine('silent', 10, { url: `unix://${socketPath}`, socketPath });
  onTestFinished(async () => {
    await engine.close();
    held.forEach((s) => s.destroy());
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  return engine;
}

describe('a Docker engine that stops answering', () => {
  it('fails a call that is waiting on it once another call finds it unreachable, and refuses new calls at once', async () => {
    const engine = await silentEngine();
    // An exec's start: a raw connection and a request with no timeout of its own (docker-exec.ts hijack).
    const stuck = engine.use(async (api) => {
      const sock = await api.connect();
      sock.write('POST /v1.41/exec/x/start HTTP/1.1\r\nHost: docker\r\n\r\n');
      return new Promise<never>(() => {});
    });
    const t = Date.now();
    await expect(engine.use((api) => api.call('GET', '/_ping', undefined, { timeoutMs: 300 }))).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN' });
    await expect(stuck).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN', statusCode: 503 });
    expect(Date.now() - t).toBeLessThan(5_000);
    expect(engine.up).toBe(false);
    await expect(engine.use(() => Promise.resolve('never run'))).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN' });
  });

  it('fails a waiting call when its health ping marks it down', async () => {
    const engine = await silentEngine();
    const stuck = engine.use(() => new Promise<never>(() => {}));
    engine.markDown('health ping failed');
    await expect(stuck).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN' });
  });

  it('leaves calls that end before it is marked down alone', async () => {
    const engine = await silentEngine();
    expect(await engine.use(() => Promise.resolve(7))).toBe(7);
    await expect(engine.use(() => Promise.reject(new Error('a refusal of its own')))).rejects.toThrow('a refusal of its own');
    expect(engine.up).toBe(true);
    engine.markDown('later');
    expect(engine.up).toBe(false);
  });
});
