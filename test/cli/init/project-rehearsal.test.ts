// A first run as a new user makes it, with no model key and no model endpoint: `init --example finqa`,
// `npm install` (offline: the project links this checkout), `npm start`, then the README's rehearsal,
// `rollout --model scripted:scripted.jsonl` over the whole dataset and `report`.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RolloutResult } from '../../../src/cli/rollout/run.js';
import { spawnServer, type ChildServer } from '../../helpers/child-server.js';
import { readJsonl, removeTempDirs, runCli, tempDir } from '../harness.js';

let server: ChildServer | undefined;
afterAll(async () => {
  await server?.stop();
  removeTempDirs();
});

describe('the rehearsal an init project README shows', () => {
  it('init, install, start, a scripted rollout of every row and its report: no key, no network', async () => {
    const dir = join(tempDir('rft-rehearsal-'), 'finqa');
    const init = await runCli(['init', dir, '--example', 'finqa']);
    expect(init.code, init.stderr).toBe(0);
    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    expect(readme).toContain('npx rft-endpoints rollout --dataset train.jsonl --model scripted:scripted.jsonl -k 2 --out rehearsal.jsonl');
    const install = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, npm_config_update_notifier: 'false' },
      timeout: 120_000,
    });
    expect(install.status, install.stderr).toBe(0);
    server = await spawnServer({ RFT_DATA_DIR: join(dir, 'data') }, { command: ['npm', 'start', '--silent'], cwd: dir, timeoutMs: 90_000 });
    // The project's own CLI, as `npx rft-endpoints` runs it; the environment names no model and no model key.
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [join(dir, 'node_modules/.bin/rft-endpoints'), ...args], {
        cwd: dir,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', RFT_API_KEY: readFileSync(join(dir, 'data/api-key'), 'utf8').trim() },
        timeout: 120_000,
      });
    const rollout = cli(['rollout', '--dataset', 'train.jsonl', '--model', 'scripted:scripted.jsonl', '-k', '2', '--concurrency', '8', '--out', 'rehearsal.jsonl', '--server', server.url]);
    expect(rollout.stderr).not.toMatch(/RFT_ERR/);
    expect(rollout.status).toBe(0);
    const results = readJsonl<RolloutResult>(join(dir, 'rehearsal.jsonl'));
    expect(results).toHaveLength(26 * 2);
    // Each row's first try reads the source and gives the reference answer, its second gives up.
    for (let row = 0; row < 26; row++) {
      const tries = results.filter((r) => r.row === row).sort((a, b) => a.tool_calls - b.tool_calls);
      expect(tries.map((r) => [r.discarded, r.tool_calls, r.score])).toEqual([
        [false, 1, 0],
        [false, 2, 1],
      ]);
    }
    const report = cli(['report', 'rehearsal.jsonl']);
    expect(report.status, report.stderr).toBe(0);
    expect(report.stdout).toMatch(/rollouts\s+52 \(52 graded, 0 discarded\)/);
    expect(report.stdout).toMatch(/mean score \(per rollout\)\s+0\.500/);
    expect(report.stdout).toMatch(/rows with no learning signal\s+0 of 26/);
  }, 240_000);
});
