// What the HTTP benchmarks share: a server in a child process, autocannon against it, and the CPU
// each request cost the server and the client (read from /proc).
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/** CPU time (user + system) of a process so far, in seconds; NaN where /proc is missing. */
export function cpuSeconds(pid: number | 'self'): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

export interface Server {
  url: string;
  proc: ChildProcess;
}

/** bench/pipeline-server.ts in a child process, in the given mode (see that file). */
export async function startServer(mode: string): Promise<Server> {
  // rft-source: units that import 'rft-endpoints' (the repository's tools) get its source, not a build
  const proc = spawn(process.execPath, ['--conditions=rft-source', '--import', 'tsx', join(import.meta.dirname, '..', 'pipeline-server.ts'), mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(proc.stdout!, 'data')) as [Buffer];
  return { url: line.toString().trim(), proc };
}

async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** A FastAPI app of bench/ (`module:app`) under uvicorn with this Python; `hint` says how to install them. */
export async function startUvicorn(python: string, app: string, hint: string, opts: { quiet?: boolean } = {}): Promise<Server> {
  const port = await freePort();
  const proc = spawn(python, ['-m', 'uvicorn', '--app-dir', join(import.meta.dirname, '..'), '--host', '127.0.0.1', '--port', String(port), '--log-level', 'warning', app], {
    // quiet: an app that logs each request (as shipped) writes it nowhere, as a server under a collector would
    stdio: ['ignore', opts.quiet ? 'ignore' : 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`uvicorn exited with ${proc.exitCode} (${hint})`);
    try {
      if ((await fetch(`${url}/docs`)).ok) return { url, proc };
    } catch {
      if (i > 300) throw new Error('uvicorn did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

export async function stopServer(s: Server): Promise<void> {
  if (s.proc.exitCode !== null) return;
  s.proc.kill('SIGTERM');
  await once(s.proc, 'exit');
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  serverUs: number;
  clientUs: number;
}

/** POSTs bodies from `body()` to url for `seconds` on `connections` connections, after a 2 s warm-up. */
export async function load(
  server: Server,
  path: string,
  body: () => string,
  opts: { seconds: number; connections: number; headers?: Record<string, string>; requestHeaders?: () => Record<string, string> },
): Promise<LoadResult> {
  const extra = opts.requestHeaders;
  const ac = {
    url: `${server.url}${path}`,
    connections: opts.connections,
    duration: opts.seconds,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', ...opts.headers },
    requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, body: body(), ...(extra ? { headers: { ...req.headers, ...extra() } } : {}) }) }],
  };
  await autocannon({ ...ac, duration: 2 });
  const s0 = cpuSeconds(server.proc.pid!);
  const c0 = cpuSeconds('self');
  const r = await autocannon(ac);
  const us = (cpu: number) => (cpu * 1e6) / r.requests.total;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts + r.non2xx,
    serverUs: us(cpuSeconds(server.proc.pid!) - s0),
    clientUs: us(cpuSeconds('self') - c0),
  };
}

export const fmt = (x: number, d = 1): string => x.toFixed(d).padStart(9);
