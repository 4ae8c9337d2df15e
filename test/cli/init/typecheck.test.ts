// An init'ed project type-checks its units against this package's exported types with `npm run typecheck`,
// in a clone that never built dist/ (the project links the clone with file:, its tsconfig.json resolves
// `rft-endpoints` to src/ through the rft-source condition): every example's units pass, and a grader that
// reads a call's `name` (the field is `tool`) is refused with TS2339 instead of scoring wrongly.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTempDirs, repoRoot, runCli, tempDir } from '../harness.js';

afterAll(() => removeTempDirs());

/** What `npm install` (file: link) and `npm install -D typescript` leave in node_modules, without the registry. */
function install(dir: string): void {
  mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
  symlinkSync(repoRoot, join(dir, 'node_modules/rft-endpoints'));
  symlinkSync(join(repoRoot, 'node_modules/typescript'), join(dir, 'node_modules/typescript'));
  symlinkSync('../typescript/bin/tsc', join(dir, 'node_modules/.bin/tsc'));
}

const typecheck = (dir: string) => spawnSync('npm', ['run', 'typecheck', '--silent'], { cwd: dir, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' }, timeout: 240_000 });

describe('npm run typecheck of an init project', () => {
  it('runs on a clone without dist/', () => {
    expect(existsSync(join(repoRoot, 'dist/src/index.d.ts'))).toBe(false);
  });

  for (const example of ['blank', 'finqa', 'coding']) {
    it(`passes on the ${example} example's units`, async () => {
      const dir = join(tempDir('rft-typecheck-'), example);
      const init = await runCli(['init', dir, '--example', example]);
      expect(init.code, init.stderr).toBe(0);
      expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).scripts.typecheck).toBe('tsc -p tsconfig.json');
      install(dir);
      const r = typecheck(dir);
      expect(r.stdout + r.stderr).toBe('');
      expect(r.status).toBe(0);
    }, 300_000);
  }

  it("fails on a grader reading a call's `name` (TS2339: the field is `tool`), naming the file and line", async () => {
    const dir = join(tempDir('rft-typecheck-'), 'names');
    expect((await runCli(['init', dir, '--example', 'blank'])).code).toBe(0);
    install(dir);
    writeFileSync(
      join(dir, 'graders/looked_up.ts'),
      [
        "import { defineGrader } from 'rft-endpoints';",
        'export default defineGrader({',
        "  name: 'looked_up',",
        "  description: 'did the model look the price up',",
        '  readsCalls: true,',
        '  async handler(_input, ctx) {',
        "    return (await ctx.rollout.calls()).some((c) => c.name === 'lookup_price') ? 1 : 0;",
        '  },',
        '});',
        '',
      ].join('\n'),
    );
    const r = typecheck(dir);
    expect(r.status).not.toBe(0);
    expect(r.stdout).toMatch(/graders\/looked_up\.ts\(7,\d+\): error TS2339: Property 'name' does not exist on type 'RecordedCall'/);
  }, 300_000);
});
