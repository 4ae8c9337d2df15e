// graders/NAME.py: a Python file defining grade(sample, item), loaded as OpenAI's `python` grader
// with the file as its source, named by its stem: it scores what the same source in a JSON config
// scores, through the same runner and sandbox; a file Python cannot compile, or one without a
// grade, stops the boot with RFT_ERR_UNIT_LOAD naming the file and the line.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errors } from '../../src/errors.js';
import { loadRegistry, type LoadedGrader } from '../../src/registry/loader.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { gradingLimits } from '../../src/sandbox/workspace/limits.js';
import { driverCases, limits, sandboxSpec, useDriver } from '../helpers/sandboxes.js';

const SOURCE = [
  'import re',
  '',
  '',
  'def grade(sample, item) -> float:',
  '    numbers = re.findall(r"-?\\d+(?:\\.\\d+)?", sample.get("output_text") or "")',
  '    if not numbers:',
  '        return 0.0',
  '    error = abs(float(numbers[-1]) - float(item["reference_answer"])) / abs(float(item["reference_answer"]))',
  '    return max(0.0, 1.0 - error)',
  '',
].join('\n');

function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-pygrader-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const load = (gradersDir: string) => loadRegistry({ toolsDir: join(gradersDir, 'no-tools'), gradersDir });

async function loadError(gradersDir: string): Promise<{ code?: string; message: string }> {
  return (await load(gradersDir).then(
    () => ({ message: 'loaded' }),
    (e: unknown) => e,
  )) as { code?: string; message: string };
}

it('a graders/*.py file is a grader named by its stem; pytest files, _private and dot files are not', async () => {
  const dir = project({ 'near_number.py': SOURCE, '_helpers.py': 'x = 1\n', 'test_near_number.py': 'def test(): pass\n', '.hidden.py': SOURCE });
  const reg = await load(dir);
  expect([...reg.graders.keys()]).toEqual(['near_number']);
  expect(reg.graders.get('near_number')?.file).toBe(join(dir, 'near_number.py'));
});

it('a .py grader Python cannot compile stops the boot with RFT_ERR_UNIT_LOAD naming the file and the line', async () => {
  const dir = project({ 'broken.py': 'import re\n\ndef grade(sample, item) -> float\n    return 1.0\n' });
  const e = await loadError(dir);
  expect(e.code).toBe(errors.unitLoad.code);
  expect(e.message).toContain(`${join(dir, 'broken.py')}: line 3: SyntaxError`);
  const indent = await loadError(project({ 'indent.py': 'def grade(sample, item):\nreturn 1.0\n' }));
  expect(indent.code).toBe(errors.unitLoad.code);
  expect(indent.message).toMatch(/indent\.py: line 2: IndentationError/);
});

it('a .py grader with no grade function stops the boot naming the file', async () => {
  const dir = project({ 'nothing.py': 'def score(sample, item):\n    return 1.0\n' });
  const e = await loadError(dir);
  expect(e.code).toBe(errors.unitLoad.code);
  expect(e.message).toBe(`${join(dir, 'nothing.py')}: defines no grade(sample, item) function`);
});

it('a .py grader and a JSON python grader of the same source share a name: a duplicate', async () => {
  const dir = project({ 'same.py': SOURCE, 'same.json': JSON.stringify({ type: 'python', name: 'x', source: SOURCE }) });
  expect((await loadError(dir)).code).toBe(errors.unitDuplicate.code);
});

for (const d of driverCases.filter((c) => c.available && c.name !== 'docker')) {
  describe(`on the ${d.name} driver`, () => {
    const ctx = useDriver(d);
    it('a .py grader scores what the JSON python grader of the same source scores, on the same samples', async () => {
      const dir = project({ 'near_number.py': SOURCE, 'as_json.json': JSON.stringify({ type: 'python', name: 'as_json', source: SOURCE }) });
      const reg = await load(dir);
      const made: Sandbox[] = [];
      const grade = async (g: LoadedGrader | undefined, text: string) => {
        const r = await g!.def.handler({ sample: { output_text: text, output_json: null, output_tools: [], choices: [] }, item: { reference_answer: '40' } } as never, {
          signal: new AbortController().signal,
          freshSandbox: async () => {
            const sb = await ctx.driver.create({ ...sandboxSpec(`trace_${randomUUID()}`), limits: gradingLimits(limits) });
            made.push(sb);
            return sb;
          },
        } as never);
        return (r as { score: number }).score;
      };
      try {
        for (const [text, want] of [['The answer is 40.', 1], ['about 38', 0.95], ['no idea', 0]] as const) {
          const py = await grade(reg.graders.get('near_number'), text);
          expect(py).toBeCloseTo(want, 10);
          expect(py).toBe(await grade(reg.graders.get('as_json'), text));
        }
      } finally {
        await Promise.allSettled(made.map((s) => s.destroy()));
      }
    }, 60_000);
  });
}
