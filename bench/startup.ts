// Start-up time of `rft-endpoints serve`: compiled (node dist/src/cli/main.js, after `npm run build`)
// against the TypeScript source through tsx (node bin/rft-endpoints.js in a checkout), both serving
// the shipped units, measured from spawn to the "listening on" line. Runs alternate, so machine load
// hits both alike. Also times `--help` both ways.
//   npm run build && node --conditions=rft-source --import tsx bench/startup.ts [runs]
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const runs = Number(process.argv[2] ?? 5);
if (!existsSync(join(root, 'dist/src/cli/main.js'))) throw new Error('run `npm run build` first');

const MODES = {
  compiled: [join(root, 'dist/src/cli/main.js'), 'serve', '--tools', join(root, 'dist/tools'), '--graders', join(root, 'dist/graders')],
  tsx: [join(root, 'bin/rft-endpoints.js'), 'serve'],
} as const;

function startOnce(args: readonly string[]): Promise<number> {
  const data = mkdtempSync(join(tmpdir(), 'rft-startup-'));
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', PORT: '0', RFT_DATA_DIR: data, RFT_SANDBOX: 'none', RFT_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('listening on')) {
        const ms = performance.now() - t0;
        child.once('exit', () => {
          rmSync(data, { recursive: true, force: true });
          resolve(ms);
        });
        child.kill('SIGTERM');
      }
    });
    child.once('exit', (code) => {
      if (!err.includes('listening on')) reject(new Error(`exited ${code}: ${err}`));
    });
  });
}

function runOnce(args: readonly string[]): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { cwd: root, stdio: 'ignore' });
  return new Promise((resolve) => child.once('exit', () => resolve(performance.now() - t0)));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const serve: Record<string, number[]> = { compiled: [], tsx: [] };
const help: Record<string, number[]> = { compiled: [], tsx: [] };
const bare: number[] = [];
for (let i = 0; i < runs; i++) {
  for (const [mode, args] of Object.entries(MODES)) {
    serve[mode]!.push(await startOnce(args));
    help[mode]!.push(await runOnce([args[0]!, '--help']));
  }
  bare.push(await runOnce(['-e', '0']));
}
const c = median(serve.compiled!);
const t = median(serve.tsx!);
console.log(`node -e 0 (baseline)        ${median(bare).toFixed(0)} ms`);
console.log(`serve, compiled (dist/)     ${c.toFixed(0)} ms (median of ${runs})`);
console.log(`serve, tsx (source)         ${t.toFixed(0)} ms (${(t / c).toFixed(2)}x compiled)`);
console.log(`--help, compiled            ${median(help.compiled!).toFixed(0)} ms`);
console.log(`--help, tsx                 ${median(help.tsx!).toFixed(0)} ms`);
