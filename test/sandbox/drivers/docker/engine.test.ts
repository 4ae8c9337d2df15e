// An engine that accepts connections and then never answers (a stopped dockerd: the kernel still
// queues connections on its socket): calls already running against it fail with ENGINE_DOWN once it
// is marked down and its first probe finds it still silent, instead of hanging with it; an engine
// that was only slow (answers that probe) leaves them running. The engine here is a real unix socket
// server that reads requests and answers nothing, or, once told to, answers every request 200 OK.
import { describe, expect, it, onTestFinished } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerEngine } from '../../../../src/sandbox/drivers/docker/engine.js';
import { waitFor } from '../../../helpers/wait.js';

const OK = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nOK';

/**
 * An engine that holds every request unanswered until `answer()`; from then on it answers each 200 OK.
 * With `holdFirstMs`, it answers from the start, the first request only after that long.
 */
async function silentEngine(holdFirstMs?: number): Promise<DockerEngine & { answer(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'rft-engine-'));
  const socketPath = join(dir, 'docker.sock');
  const held: Socket[] = [];
  let answering = holdFirstMs !== undefined;
  let requests = 0;
  const answer = (sock: Socket): void => {
    if (!answering) return;
    if (requests++ === 0 && holdFirstMs) setTimeout(() => sock.write(OK), holdFirstMs);
    else sock.write(OK);
  };
  const server = createServer((sock) => void held.push(sock.on('data', () => answer(sock))));
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  const engine = new DockerEngine('silent', 10, { url: `unix://${socketPath}`, socketPath });
  onTestFinished(async () => {
    await engine.close();
    held.forEach((s) => s.destroy());
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  return Object.assign(engine, { answer: () => void (answering = true) });
}


describe('a Docker engine that stops answering', () => {
  it('fails a call that is waiting on it once another call finds it unreachable and the probe too, and refuses new calls at once', async () => {
    const engine = await silentEngine();
    // An exec's start: a raw connection and a request with no timeout of its own (exec.ts hijack).
    const stuck = engine.use(async (api) => {
      const sock = await api.connect();
      sock.write('POST /v1.41/exec/x/start HTTP/1.1\r\nHost: docker\r\n\r\n');
      return new Promise<never>(() => {});
    });
    const t = Date.now();
    await expect(engine.use((api) => api.call('GET', '/_ping', undefined, { timeoutMs: 300 }))).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN' });
    expect(engine.up).toBe(false);
    await expect(engine.use(() => Promise.resolve('never run'))).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN' });
    // The probe (2 s later, 3-s timeout) finds it silent too: the waiting call fails instead of hanging.
    await expect(stuck).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN', statusCode: 503 });
    expect(Date.now() - t).toBeLessThan(20_000);
  });

  it('fails a waiting call when its health ping marks it down and the probe finds it silent', async () => {
    const engine = await silentEngine();
    const stuck = engine.use(() => new Promise<never>(() => {}));
    engine.markDown('health ping failed');
    await expect(stuck).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN' });
    expect(engine.up).toBe(false);
  });

  it('lets a call running on an engine that missed one ping finish when the probe answers, refusing new calls meanwhile', async () => {
    const engine = await silentEngine();
    let finish = (_: number): void => {};
    const running = engine.use(() => new Promise<number>((resolve) => (finish = resolve)));
    engine.markDown('health ping failed');
    await expect(engine.use(() => Promise.resolve('never run'))).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENGINE_DOWN' });
    engine.answer();
    await waitFor('the engine back in placement', () => engine.up || undefined, 20_000, 50);
    finish(7);
    expect(await running).toBe(7);
    expect(await engine.use(() => Promise.resolve(8))).toBe(8);
  });

  it('leaves calls that end before it is marked down alone', async () => {
    const engine = await silentEngine();
    expect(await engine.use(() => Promise.resolve(7))).toBe(7);
    await expect(engine.use(() => Promise.reject(new Error('a refusal of its own')))).rejects.toThrow('a refusal of its own');
    expect(engine.up).toBe(true);
    engine.markDown('later');
    expect(engine.up).toBe(false);
  });

  it('stays in placement when it misses one ping and answers the next: a busy engine, not a dead one', async () => {
    // Series run 5 (stop 34): a gVisor sandbox dying under its fork bomb held a loaded machine's engine
    // past one ping's 3 s; marked down on that, it answered 503 to every rollout's calls there.
    const engine = await silentEngine(3_500);
    expect(await engine.check('a killed command never ended')).toBe(true);
    expect(engine.up).toBe(true);
  });

  it('is taken out of placement when it misses two pings a second apart', async () => {
    const engine = await silentEngine();
    expect(await engine.check('a killed command never ended')).toBe(false);
    expect(engine.up).toBe(false);
  });

  it("lets work that must not be refused wait for a marked-down engine's probe: answered, the engine is back", async () => {
    const engine = await silentEngine();
    engine.markDown('health pings failed');
    engine.answer();
    await engine.settled();
    expect(engine.up).toBe(true);
    const silent = await silentEngine();
    silent.markDown('health pings failed');
    const t = Date.now();
    await silent.settled();
    expect(silent.up).toBe(false);
    expect(Date.now() - t).toBeLessThan(10_000);
  });
});
