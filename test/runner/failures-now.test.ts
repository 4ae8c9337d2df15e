// The full suite's reporters print a failure's details when its file ends, before the files after it,
// and not only in the summary at the end of the run.
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import config from '../../vitest.config.js';
import { removeTempDirs, repoRoot, tempDir } from '../cli/harness.js';

afterAll(removeTempDirs);

it('vitest.config.ts adds failures-now to the default reporter', () => {
  expect(config.test?.reporters).toEqual(['default', './test/runner/failures-now.ts']);
});

it("prints a failing test's assertion and diff as its file ends, before the next file's result", () => {
  const dir = tempDir('rft-reporter-');
  writeFileSync(join(dir, 'a.check.ts'), "import { expect, it } from 'vitest';\nit('fails on purpose', () => { expect({ a: 1 }).toEqual({ a: 2 }); });\n");
  // Runs beside a.check.ts (two workers) and ends well after it.
  writeFileSync(join(dir, 'b.check.ts'), "import { expect, it } from 'vitest';\nit('passes after', async () => { await new Promise((r) => setTimeout(r, 2000)); expect(1).toBe(1); });\n");
  writeFileSync(
    join(dir, 'vitest.config.mjs'),
    `export default { test: { include: ['*.check.ts'], maxWorkers: 2, reporters: ['default', ${JSON.stringify(join(repoRoot, 'test/runner/failures-now.ts'))}] } };\n`,
  );
  // stdout and stderr into one file, in the order they were written, as on a terminal.
  const log = join(dir, 'out.log');
  const fd = openSync(log, 'w');
  const r = spawnSync(process.execPath, [join(repoRoot, 'node_modules/vitest/vitest.mjs'), 'run', '--root', dir, '--config', join(dir, 'vitest.config.mjs')], {
    env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', CI: '1' },
    stdio: ['ignore', fd, fd],
    timeout: 120_000,
  });
  closeSync(fd);
  const out = readFileSync(log, 'utf8');
  expect(r.status, out).toBe(1);
  const early = out.indexOf('FAIL a.check.ts > fails on purpose\nAssertionError: expected { a: 1 } to deeply equal { a: 2 }');
  expect(early, out).toBeGreaterThanOrEqual(0);
  expect(out.indexOf(' b.check.ts (1 test)')).toBeGreaterThan(early);
  expect(out.indexOf('Failed Tests 1')).toBeGreaterThan(early);
}, 120_000);
