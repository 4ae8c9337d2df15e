// The engine's event stream as the driver keeps it (src/sandbox/drivers/docker/events.ts): open while
// a sandbox holds it or an exec waits, reopened from where it stopped, each container's last oom kept
// (bounded, dropped with its container), and each one's last kill through the engine. A fake stream here; the real engine's replay bound that makes
// this necessary is exercised in lost.test.ts.
import { PassThrough } from 'node:stream';
import { expect, it, vi } from 'vitest';
import type { DockerApi } from '../../../../src/sandbox/drivers/docker/api.js';
import { EngineEvents } from '../../../../src/sandbox/drivers/docker/events.js';

function fakeApi(): { api: DockerApi; opened: string[]; body: (i: number) => PassThrough } {
  const opened: string[] = [];
  const bodies: PassThrough[] = [];
  const api = {
    stream: (path: string) => {
      opened.push(path);
      const body = new PassThrough();
      bodies.push(body);
      return Promise.resolve({ status: 200, body, headers: {} });
    },
  } as unknown as DockerApi;
  const body = (i: number): PassThrough => {
    const b = bodies[i];
    if (!b) throw new Error(`no stream ${i} was opened`);
    return b;
  };
  return { api, opened, body };
}

const oom = (name: string, s: number): string => `${JSON.stringify({ Action: 'oom', time: s, timeNano: s * 1e9 + 5e8, Actor: { Attributes: { name } } })}\n`;

it("keeps each container's last oom while a sandbox holds the stream, bounded, and forgets it with its container", async () => {
  const { api, opened, body } = fakeApi();
  const ev = new EngineEvents(api, 'rft-endpoints.sandbox');
  const release = ev.hold();
  await vi.waitFor(() => expect(opened).toHaveLength(1));
  expect(decodeURIComponent(opened.join())).toContain('"event":["exec_die","oom","die","kill"]');
  body(0).write(oom('rft-a', 100));
  body(0).write(oom('rft-a', 200).slice(0, 20)); // a line split across chunks
  body(0).write(oom('rft-a', 200).slice(20));
  await vi.waitFor(() => expect(ev.oomAt('rft-a')).toBe(200_500));
  ev.forgetContainer('rft-a');
  expect(ev.oomAt('rft-a')).toBeUndefined();
  for (let i = 0; i < 4100; i++) body(0).write(oom(`rft-${i}`, 300));
  await vi.waitFor(() => expect(ev.oomAt('rft-4099')).toBe(300_500));
  expect(ev.oomAt('rft-0')).toBeUndefined(); // the oldest went first
  expect(ev.oomAt('rft-4')).toBe(300_500);
  release();
  release(); // once only
  expect(body(0).destroyed).toBe(true);
});

it('reopens a held stream that ended from just before its last event, and not one nobody holds', async () => {
  const { api, opened, body } = fakeApi();
  const ev = new EngineEvents(api, 'rft-endpoints.sandbox');
  const release = ev.hold();
  await vi.waitFor(() => expect(opened).toHaveLength(1));
  body(0).write(oom('rft-b', 500));
  await vi.waitFor(() => expect(ev.oomAt('rft-b')).toBeDefined());
  body(0).end(); // the engine restarted
  await vi.waitFor(() => expect(opened).toHaveLength(2), { timeout: 3_000 });
  expect(opened.at(-1)).toMatch(/&since=499$/);
  release();
  expect(body(1).destroyed).toBe(true);
  await new Promise((r) => setTimeout(r, 700));
  expect(opened).toHaveLength(2);
});

it("keeps each container's last kill through the engine (not the grader's SIGUSR1 to a keeper), and counts the stream's breaks", async () => {
  const { api, opened, body } = fakeApi();
  const ev = new EngineEvents(api, 'rft-endpoints.sandbox');
  const release = ev.hold();
  await vi.waitFor(() => expect(opened).toHaveLength(1));
  expect(ev.isOpen).toBe(true);
  const kill = (name: string, signal: string, s: number): string => `${JSON.stringify({ Action: 'kill', time: s, timeNano: s * 1e9, Actor: { Attributes: { name, signal } } })}\n`;
  body(0).write(kill('rft-k', '10', 700));
  body(0).write(kill('rft-l', '9', 701));
  await vi.waitFor(() => expect(ev.killedAt('rft-l')).toBe(701_000));
  expect(ev.killedAt('rft-k')).toBeUndefined();
  expect(ev.breaks).toBe(0);
  body(0).end(); // the engine restarted
  await vi.waitFor(() => expect(ev.breaks).toBe(1));
  ev.forgetContainer('rft-l');
  expect(ev.killedAt('rft-l')).toBeUndefined();
  release();
});

it('stays open while an exec waits after the last holder went, and closes when neither needs it', async () => {
  const { api, opened, body } = fakeApi();
  const ev = new EngineEvents(api, 'rft-endpoints.sandbox');
  const release = ev.hold();
  const { died } = await ev.watch('exec1');
  release();
  expect(body(0).destroyed).toBe(false);
  body(0).write(`${JSON.stringify({ Action: 'exec_die', time: 1, Actor: { Attributes: { execID: 'exec1', exitCode: '3' } } })}\n`);
  await expect(died).resolves.toBe(3);
  expect(body(0).destroyed).toBe(true);
  expect(opened).toHaveLength(1);
});

it("tells each watcher of its own container's death only, until it stops watching", async () => {
  const { api, opened, body } = fakeApi();
  const ev = new EngineEvents(api, 'rft-endpoints.sandbox');
  const release = ev.hold();
  await vi.waitFor(() => expect(opened).toHaveLength(1));
  const seen: string[] = [];
  const unA1 = ev.onDeath('rft-a', () => seen.push('a1'));
  ev.onDeath('rft-a', () => seen.push('a2'));
  ev.onDeath('rft-b', () => seen.push('b'));
  const die = (name: string): string => `${JSON.stringify({ Action: 'die', time: 7, Actor: { Attributes: { name, exitCode: '137' } } })}\n`;
  body(0).write(die('rft-c'));
  body(0).write(oom('rft-a', 7)); // an oom is not a death
  unA1();
  body(0).write(die('rft-a'));
  await vi.waitFor(() => expect(seen).toEqual(['a2']));
  body(0).write(die('rft-b'));
  await vi.waitFor(() => expect(seen).toEqual(['a2', 'b']));
  release();
});
