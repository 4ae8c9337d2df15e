// Starts the process: config, app, listen, graceful shutdown. Everything else is in app.ts.
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { isLoopback, loadConfig, type AppConfig } from './config.js';
import { errors } from './errors.js';
import { credentialsNote } from './authentication/boot-note.js';

export interface StartedServer {
  app: FastifyInstance;
  url: string;
  config: AppConfig;
}

export async function startServer(config: AppConfig): Promise<StartedServer> {
  const app = await buildApp(config);
  const { auth, localKey } = app.rft;
  if (!auth.configured) {
    if (!isLoopback(config.host)) throw errors.insecureListen(config.host);
    app.log.warn('no credential configured: every request will be refused (set RFT_API_KEYS or RFT_SIGNING_SECRETS)');
  }
  // (A process sandbox driver on a non-loopback host never gets here: building the app refuses it.)
  const sandboxDriver = app.rft.sandboxes?.stats().driver;
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (e) {
    await app.close();
    if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') throw errors.portInUse(config.host, config.port);
    throw e;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `${config.tls ? 'https' : 'http'}://${urlHost(config.host)}:${port}`;
  // Where a curl on this machine (or in this container) reaches it: not the wildcard it listens on.
  const reachable = `${config.tls ? 'https' : 'http'}://${urlHost(reachableHost(config.host))}:${port}`;
  if (localKey?.created) {
    // Printed once, on the terminal, never in the JSON logs.
    process.stderr.write(`\nNo credential configured: created an API key for this server (kept in ${localKey.path}):\n\n  ${localKey.key}\n\n`);
  }
  process.stderr.write(credentialsNote(config, localKey));
  const tools = [...app.rft.registry.tools.keys()];
  const demo = tools.includes('search_docs')
    ? { name: 'search_docs', args: '{\\"query\\":\\"Q3 revenue\\"}' }
    : { name: tools[0] ?? 'TOOL', args: '{}' };
  process.stderr.write(
    `rft-endpoints listening on ${url} (${count(tools.length, 'tool')}, ${count(app.rft.registry.graders.size, 'grader')}, sandbox: ${sandboxDriver ?? 'none'})\n` +
      `  try: ${localKey ? `KEY=$(cat ${localKey.path}); ` : ''}curl -s ${reachable}/tools -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \\\n` +
      `        -d '{"type":"function_call","call_id":"call_1","name":"${demo.name}","arguments":"${demo.args}","trace_id":"trace_demo","item":{}}'\n` +
      doorListeners(app),
  );
  return { app, url, config };
}

/** The listeners besides the main one (started before listen() returned), one line each: they take no credential. */
function doorListeners(app: FastifyInstance): string {
  const { nemoGym, privateDoors, metricsListener } = app.rft;
  return (
    (nemoGym ? `  NeMo Gym door: ${nemoGym.url} (no credential: loopback or the trainers' network only)\n` : '') +
    (privateDoors ? `  private listener (OpenEnv, reward, SandboxFusion doors): ${privateDoors.url} (no credential: loopback or the trainers' network only)\n` : '') +
    (metricsListener ? `  metrics: ${metricsListener.url} (no credential)\n` : '')
  );
}

/** "1 tool", "2 tools". */
function count(n: number, word: string): string {
  return `${n} ${n === 1 ? word : `${word}s`}`;
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** The loopback address of the wildcard a server listens on (0.0.0.0, ::), else the address itself. */
export function reachableHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host;
}

/** Runs until SIGINT/SIGTERM, then stops accepting, lets running calls finish, and closes the store. */
export async function runServer(opts: { configFile?: string | undefined; overrides?: Record<string, unknown> } = {}): Promise<void> {
  const config = loadConfig(undefined, opts);
  const { app } = await startServer(config);
  let closing = false;
  const stop = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    // Keep-alive connections that were busy when closing began go idle later: close them then,
    // or the server would wait for the keep-alive timeout before it can exit.
    const sweep = setInterval(() => app.server.closeIdleConnections?.(), 100);
    sweep.unref();
    app.close().then(
      () => process.exit(0),
      (e: unknown) => {
        app.log.error({ err: e }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}
