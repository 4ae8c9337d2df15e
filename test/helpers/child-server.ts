// Runs the real CLI (`rft-endpoints serve`) as a child process, for tests that kill it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, vi } from 'vitest';
import { request } from 'undici';
import { runLabelsEnv } from './run-label.js';
import { repoRoot } from './server.js';

export interface ChildServer {
  url: string;
  proc: ChildProcess;
  stderr: () => string;
  /** JSON log lines (pino writes to stdout). */
  stdout: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface SpawnOptions {
  /** The command (default: this checkout's `rft-endpoints serve`). */
  command?: [string, ...string[]];
  cwd?: string;
  timeoutMs?: number;
}

/** Servers of this test file still running: a failed test never reaches its own stop(). */
const running = new Set<ChildServer>();
// Registered when a test file imports this module (each file gets a fresh copy), so it runs after the
// file's own afterAll hooks: SIGTERM first (a server then removes its sandboxes), SIGKILL after 30 s.
// Benches import these helpers outside vitest, where there are no hooks.
if (process.env.VITEST) afterAll(async () => {
  await Promise.all(
    [...running].map(async (s) => {
      const t = setTimeout(() => void s.stop('SIGKILL'), 30_000);
      await s.stop('SIGTERM');
      clearTimeout(t);
    }),
  );
}, 60_000);

// Generous by default: the wait ends as soon as the server prints its address; a loaded 2-core machine
// can take tens of seconds to compile and boot the TypeScript sources.
export async function spawnServer(env: Record<string, string>, opts: SpawnOptions | number = {}): Promise<ChildServer> {
  const o = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const timeoutMs = o.timeoutMs ?? 60_000;
  const [cmd, ...args] = o.command ?? [process.execPath, join(repoRoot, 'bin/rft-endpoints.js'), 'serve'];
  const proc = spawn(cmd, args, {
    cwd: o.cwd ?? repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', RFT_LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: '0', RFT_SANDBOX: 'none', ...runLabelsEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: `npm start` runs the server as a grandchild, and stop() ends them all.
    detached: true,
  });
  let err = '';
  let out = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => {
      // Not left running: nothing else would ever stop it.
      if (proc.exitCode === null && proc.signalCode === null) process.kill(-proc.pid!, 'SIGKILL');
      reject(new Error(`server did not start:\n${err}`));
    }, timeoutMs);
    const check = () => {
      const m = /listening on (http\S+)/.exec(err);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    };
    proc.stderr!.on('data', check);
    proc.once('exit', (code, signal) => {
      clearTimeout(t);
      reject(new Error(`server exited with ${code ?? signal} before listening:\n${err}`));
    });
  });
  const server: ChildServer = {
    url,
    proc,
    stderr: () => err,
    stdout: () => out,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
        proc.once('exit', (code) => resolve(code));
        process.kill(-proc.pid!, signal);
      }),
  };
  running.add(server);
  proc.once('exit', () => running.delete(server));
  return server;
}

/** POST a function_call to a server's /tools over real HTTP with a bearer key. */
export async function postToolCall(url: string, key: string, body: unknown): Promise<{ status: number; body: { output: string } }> {
  const res = await request(`${url}/tools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: (await res.body.json()) as { output: string } };
}

/** Waits (at most 20 s) until the server's record has the call with this status, e.g. running: its start is committed. */
export async function untilCallStatus(url: string, key: string, traceId: string, callId: string, status: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const res = await request(`${url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${key}` } });
      const body = (await res.body.json()) as { calls?: { call_id: string; status: string }[] };
      expect(body.calls?.find((c) => c.call_id === callId)?.status).toBe(status);
    },
    { timeout: 20_000, interval: 20 },
  );
}

/** A file path nothing has created yet, for the echo tool's wait_for: `open()` lets the waiting call finish. */
export function gate(): { path: string; open: () => void } {
  const path = join(mkdtempSync(join(tmpdir(), 'rft-gate-')), 'open');
  return { path, open: () => writeFileSync(path, '') };
}
