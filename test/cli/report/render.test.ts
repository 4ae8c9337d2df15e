import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { describeIf } from '../../helpers/require.js';
import { removeTempDirs, runCli, tempDir, writeJsonl } from '../harness.js';

const chromium = ['chromium', 'chromium-browser'].find((b) => spawnSync('which', [b]).status === 0);

/** A PNG screenshot of a page, as the README's docs/report.png is made. */
function screenshot(url: string, png: string): void {
  execFileSync(chromium!, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', `--user-data-dir=${mkdtempSync(join(tmpdir(), 'rft-chromium-'))}`,
    `--screenshot=${png}`, '--window-size=1200,1600', url,
  ], { stdio: 'ignore', timeout: 60_000 });
}

afterAll(() => removeTempDirs());

describeIf(chromium !== undefined, 'Chromium', 'install it with apt-get install -y chromium')('the HTML report in a browser', () => {
  it('draws its charts: the screenshot holds far more than a blank page', async () => {
    const work = tempDir();
    const results = Array.from({ length: 40 }, (_, i) => ({
      row: i % 8, try: Math.floor(i / 8), trace_id: `trace_${i}`, score: (i * 7) % 5 / 4, tool_calls: i % 4, steps: 2,
      max_steps_reached: false, latency_ms: 100 + i, budget_exhausted: false, discarded: false, error: null, error_code: null, own_ms: 1,
    }));
    writeJsonl(join(work, 'results.jsonl'), results);
    const html = join(work, 'report.html');
    expect((await runCli(['report', join(work, 'results.jsonl'), '--html', html])).code).toBe(0);
    writeFileSync(join(work, 'blank.html'), '<!doctype html><html><body></body></html>');
    screenshot(pathToFileURL(html).href, join(work, 'report.png'));
    screenshot(pathToFileURL(join(work, 'blank.html')).href, join(work, 'blank.png'));
    expect(existsSync(join(work, 'report.png'))).toBe(true);
    expect(statSync(join(work, 'report.png')).size).toBeGreaterThan(10 * statSync(join(work, 'blank.png')).size);
  }, 120_000);
});
