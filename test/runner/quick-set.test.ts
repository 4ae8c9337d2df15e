// `npm run test:quick` (vitest.quick.config.ts) is the first check of a fresh clone: every file it runs
// needs no container, Postgres, Redis, browser, gVisor or server process of its own (a part that
// uses bubblewrap when present is skipped without it).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { QUICK, SLOW } from '../../vitest.quick.config.js';
import { repoRoot } from '../cli/harness.js';

/** What a test cannot run without, as its source names it (a part behind describeIf skips without its driver). */
const NEEDS = /containersUnavailable|testcontainers|DATABASE_URL|playwright|chromium|runsc|spawnServer/;

// A vitest include pattern as a regular expression: "**" and its slash any folders, "*" within one name.
const globRe = (pattern: string): RegExp => {
  const escaped = pattern.replace(/[.+?^$(){}|[\]\\]/g, '\\$&');
  return new RegExp('^' + escaped.split('**/').map((part) => part.replace(/\*/g, '[^/]*')).join('(?:.*/)?') + '$');
};

it('package.json runs the quick set as test:quick', () => {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  expect(pkg.scripts['test:quick']).toBe('vitest run --config vitest.quick.config.ts');
});

it('the quick set holds the unit and route tests, none of which needs a container, Postgres or a server process', () => {
  const all = (readdirSync(join(repoRoot, 'test'), { recursive: true }) as string[]).map((f) => `test/${f}`);
  const files = all.filter((f) => QUICK.some((p) => globRe(p).test(f)) && !SLOW.includes(f));
  expect(files.length).toBeGreaterThan(30);
  // What .ci/run runs on Node 20 is in it.
  for (const dir of ['test/doors/agent-rft/', 'test/routes/', 'test/protocol/', 'test/authentication/', 'test/http/', 'test/ledger/', 'test/rollout/']) {
    expect(files.some((f) => f.startsWith(dir)), dir).toBe(true);
  }
  expect(files).toContain('test/doors/agent-rft/tools.test.ts');
  expect(files).not.toContain('test/routes/fuzz.test.ts');
  const heavy = files.filter((f) => NEEDS.test(readFileSync(join(repoRoot, f), 'utf8')));
  expect(heavy).toEqual([]);
});
