// Child process for bench/pipeline.ts and bench/grade-path.ts: either the full server with the noop tools (mode
// full[:normal][:nometrics]), or a bare Fastify route answering the same JSON (mode bare). Prints its
// URL on stdout.
import Fastify from 'fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

const mode = process.argv[2];
const dataDir = mkdtempSync(join(tmpdir(), 'rft-bench-'));
let close = async () => {};
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    void close().finally(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  });
}
if (mode === 'bare') {
  const app = Fastify({ logger: false });
  app.post('/tools', async (req) => {
    const b = req.body as { call_id: string; id?: string };
    return { type: 'function_call_output', call_id: b.call_id, id: b.id, output: 'ok' };
  });
  // bench/grade-path.ts: the comparison its grader makes, with no record.
  app.post('/graders/reference_match', async (req) => {
    const b = req.body as { sample?: { output_text?: string }; item?: { reference_answer?: unknown } };
    return { score: (b.sample?.output_text ?? '').trim() === String(b.item?.reference_answer ?? '').trim() ? 1 : 0 };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const a = app.server.address();
  process.stdout.write(`http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}\n`);
} else {
  // mode: full[:normal][:nometrics][:gym] (the SQLite sync level, default full; metrics off; the NeMo Gym door too,
  // its URL printed after the server's)
  const opts = mode?.split(':') ?? [];
  const config = loadConfig({
    RFT_DATA_DIR: dataDir,
    RFT_API_KEYS: 'bench:bench-key-0123456789abcdef',
    RFT_TOOLS_DIR: join(import.meta.dirname, 'units/tools'),
    RFT_GRADERS_DIR: join(import.meta.dirname, 'units/graders'),
    // (the environment of the doors' benches: the noop tool and reference_match, one row)
    RFT_ENVIRONMENTS: join(import.meta.dirname, 'units/environments'),
    RFT_LOG_LEVEL: 'silent',
    RFT_SANDBOX: 'none',
    RFT_RATE_LIMIT: '0',
    RFT_SQLITE_SYNC: opts.includes('normal') ? 'normal' : 'full',
    RFT_METRICS: opts.includes('nometrics') ? 'false' : 'true',
    ...(opts.includes('gym') ? { RFT_NEMO_GYM_PORT: '0' } : {}),
    // :private, the private listener (its URL printed last); :bwrap, sandboxes and the repository's tools (shell)
    ...(opts.includes('private') ? { RFT_PRIVATE_PORT: '0' } : {}),
    ...(opts.includes('bwrap') ? { RFT_SANDBOX: 'bwrap', RFT_TOOLS_DIR: join(import.meta.dirname, '../tools'), RFT_SANDBOX_TEMPLATES: join(import.meta.dirname, '../examples') } : {}),
  });
  const app = await buildApp(config);
  close = () => app.close();
  await app.listen({ host: '127.0.0.1', port: 0 });
  const a = app.server.address();
  process.stdout.write(`http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}${app.rft.nemoGym ? ` ${app.rft.nemoGym.url}` : ''}${app.rft.privateDoors ? ` ${app.rft.privateDoors.url}` : ''}\n`);
}
