// Units type-checked before they are loaded (RFT_UNITS_TYPECHECK, on under `npm run dev`): a grader reading
// a recorded call's `name` (the field is `tool`) loads and grades with undefined when unchecked; checked, the
// boot stops with RFT_ERR_UNIT_TYPE naming its file, line and TypeScript's message. A passing set of files is
// remembered by content, so an unchanged restart costs a hash and an edited file is checked again.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { loadRegistry } from '../../src/registry/loader.js';
import { repoRoot } from '../helpers/server.js';

const grader = (field: string) =>
  [
    `import { defineGrader } from ${JSON.stringify(join(repoRoot, 'src/index.js'))};`,
    'export default defineGrader({',
    "  name: 'looked_up',",
    "  description: 'did the model look the price up',",
    '  readsCalls: true,',
    '  async handler(_input, ctx) {',
    `    return (await ctx.rollout.calls()).some((c) => c.${field} === 'lookup_price') ? 1 : 0;`,
    '  },',
    '});',
    '',
  ].join('\n');

function project(field: string): { gradersDir: string; toolsDir: string; dataDir: string } {
  const root = mkdtempSync(join(tmpdir(), 'rft-typecheck-'));
  writeFileSync(join(root, 'package.json'), '{"type":"module"}\n');
  mkdirSync(join(root, 'graders'));
  writeFileSync(join(root, 'graders/looked_up.ts'), grader(field));
  return { gradersDir: join(root, 'graders'), toolsDir: join(root, 'tools'), dataDir: join(root, 'data') };
}

describe('units type-checked at load', () => {
  it("stops the boot on c.name with RFT_ERR_UNIT_TYPE (file, line, TS2339), where unchecked it loads", async () => {
    const p = project('name');
    await expect(loadRegistry(p)).resolves.toMatchObject({ graders: expect.any(Map) }); // what tsx alone does
    const failed = await loadRegistry({ ...p, typecheck: { dataDir: p.dataDir } }).catch((e: unknown) => e);
    expect(failed).toMatchObject({
      code: 'RFT_ERR_UNIT_TYPE',
      details: { file: join(p.gradersDir, 'looked_up.ts'), line: 7, type_error: expect.stringMatching(/^TS2339: Property 'name' does not exist on type 'RecordedCall'/) },
    });
    expect((failed as Error).message).toMatch(/looked_up\.ts:7: TS2339/);
  }, 120_000);

  it('passes c.tool, then answers from the cache until a file changes', async () => {
    const p = project('tool');
    const opts = { ...p, typecheck: { dataDir: p.dataDir } };
    expect((await loadRegistry(opts)).typecheck).toMatchObject({ outcome: 'checked', files: 1 });
    expect((await loadRegistry(opts)).typecheck).toMatchObject({ outcome: 'cached', files: 1 });
    // A shared module's change counts too: the key is every file under the unit folders.
    mkdirSync(join(p.gradersDir, '_lib'));
    writeFileSync(join(p.gradersDir, '_lib/util.ts'), 'export const x = 1;\n');
    expect((await loadRegistry(opts)).typecheck).toMatchObject({ outcome: 'checked' });
    writeFileSync(join(p.gradersDir, 'looked_up.ts'), grader('name'));
    await expect(loadRegistry(opts)).rejects.toMatchObject({ code: 'RFT_ERR_UNIT_TYPE' });
  }, 120_000);

  it("passes the shipped units (what the repository's npm run dev loads)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-typecheck-shipped-'));
    const reg = await loadRegistry({ toolsDir: join(repoRoot, 'tools'), gradersDir: join(repoRoot, 'graders'), typecheck: { dataDir } });
    expect(reg.typecheck).toMatchObject({ outcome: 'checked', files: 12 });
  }, 180_000);

  it('RFT_UNITS_TYPECHECK: auto is on under NODE_ENV=development (npm run dev), off otherwise; 1 and 0 force it', () => {
    const on = (env: Record<string, string>) => loadConfig({ RFT_API_KEYS: 'k:secret-secret-secret', ...env }).unitsTypecheck;
    expect(on({})).toBe(false);
    expect(on({ NODE_ENV: 'development' })).toBe(true);
    expect(on({ NODE_ENV: 'production' })).toBe(false);
    expect(on({ RFT_UNITS_TYPECHECK: '1' })).toBe(true);
    expect(on({ NODE_ENV: 'development', RFT_UNITS_TYPECHECK: '0' })).toBe(false);
    expect(() => on({ RFT_UNITS_TYPECHECK: 'sometimes' })).toThrow(/RFT_UNITS_TYPECHECK/);
  });
});
