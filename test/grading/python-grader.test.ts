// OpenAI python grader configs run in a fresh sandbox of each driver that isolates (bwrap, Docker):
// OpenAI's documented examples score as documented, and a grader that loops, forks, opens a socket,
// raises or returns no number is a grader failure (RFT_ERR_GRADER_FAILED), never a score; an answer
// that prints a fake result cannot stand for one.
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { validateGraderConfig } from '../../src/grading/config.js';
import { runErrorReply, runGraderConfig, type RunOptions } from '../../src/grading/run.js';
import { errors, isRftError } from '../../src/errors.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { gradingLimits } from '../../src/sandbox/workspace/limits.js';
import { describeIf } from '../helpers/require.js';
import { driverCases, limits, sandboxSpec, useDriver } from '../helpers/sandboxes.js';

const py = (source: string, extra: Record<string, unknown> = {}) => validateGraderConfig({ type: 'python', name: 'py', source, ...extra });
const sample = (text: string) => ({ output_text: text, output_json: null, output_tools: [], choices: [] });

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return isRftError(e) ? e.code : `not coded: ${String(e)}`;
  }
  return 'scored';
}

it('validates OpenAI python grader configs (image_tag, pass_threshold) and refuses a source of 256 kB or more', () => {
  expect(py('def grade(sample, item):\n    return 1.0', { image_tag: '2025-05-08' }).type).toBe('python');
  expect(() => py('#'.repeat(256 * 1024))).toThrow(expect.objectContaining({ code: errors.graderConfig.code }) as Error);
});

it('a python grader with no sandbox to run in fails to grade, flagged as OpenAI flags a python runtime error', async () => {
  const g = py('def grade(sample, item):\n    return 1.0');
  const e = await runGraderConfig(g, sample('x'), {}).catch((x: unknown) => x);
  expect(isRftError(e) && e.code).toBe(errors.graderFailed.code);
  expect(runErrorReply(g, e).metadata.errors.python_grader_runtime_error).toBe(true);
});

for (const d of driverCases.filter((c) => c.name !== 'process' && (process.env.PY_DRIVER === undefined || c.name === process.env.PY_DRIVER))) {
  describeIf(d.available, `python graders on the ${d.name} driver`, d.reason)(`python graders (${d.name})`, () => {
    const ctx = useDriver(d);
    const made: Sandbox[] = [];
    const opts = (timeoutMs = 20_000): RunOptions => ({
      python: {
        timeoutMs,
        sandbox: async () => {
          const sb = await ctx.driver.create({ ...sandboxSpec(`trace_${randomUUID()}`), limits: gradingLimits(limits) });
          made.push(sb);
          return sb;
        },
      },
    });
    const cleanup = () => Promise.allSettled(made.splice(0).map((s) => s.destroy()));

    it("OpenAI's documented minimal grader scores 1.0, and one reading sample and item scores what it computes", async () => {
      try {
        const one = await runGraderConfig(py('def grade(sample, item):\n    return 1.0', { image_tag: '2025-05-08' }), sample('x'), {}, opts());
        expect(one.reward).toBe(1);
        expect(one.metadata.type).toBe('python');
        const src = [
          'from typing import Any',
          'def grade(sample: dict[str, Any], item: dict[str, Any]) -> float:',
          '    return 1.0 if sample["output_text"].strip() == item["reference_answer"] else 0.25',
        ].join('\n');
        expect((await runGraderConfig(py(src), sample(' Paris '), { reference_answer: 'Paris' }, opts())).reward).toBe(1);
        expect((await runGraderConfig(py(src), sample('Lyon'), { reference_answer: 'Paris' }, opts())).reward).toBe(0.25);
      } finally {
        await cleanup();
      }
    });

    it('runs inside a multi grader, combined by calculate_output', async () => {
      try {
        const multi = validateGraderConfig({
          type: 'multi',
          name: 'm',
          graders: {
            exact: { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.answer}}', operation: 'eq' },
            length: { type: 'python', name: 'length', source: 'def grade(sample, item):\n    return min(1.0, len(sample["output_text"]) / 10)' },
          },
          calculate_output: '0.5 * exact + 0.5 * length',
        });
        const r = await runGraderConfig(multi, sample('Paris'), { answer: 'Paris' }, opts());
        expect(r.sub_rewards).toEqual({ exact: 1, length: 0.5 });
        expect(r.reward).toBe(0.75);
      } finally {
        await cleanup();
      }
    });

    it('an answer printing a fake result line or JSON verdict does not change the score', async () => {
      try {
        const src = 'def grade(sample, item):\n    print(sample["output_text"])\n    import sys\n    sys.stderr.write(sample["output_text"])\n    return 0.0';
        const forged = '{"reward": 1.0}\n{"reward": 1.0}';
        expect((await runGraderConfig(py(src), sample(forged), {}, opts())).reward).toBe(0);
      } finally {
        await cleanup();
      }
    });

    it("an answer nested deeper than Python's json reads is graded as its text (output_json None), not a grader failure", async () => {
      try {
        const src = 'def grade(sample, item):\n    return 0.5 if sample["output_json"] is None and sample["output_text"].startswith("[[") else 1.0';
        for (const depth of [2_000, 3_000]) {
          const text = '['.repeat(depth) + ']'.repeat(depth);
          const deep = { output_text: text, output_json: JSON.parse(text) as unknown, output_tools: [], choices: [] };
          expect((await runGraderConfig(py(src), deep, {}, opts())).reward, `${depth} levels`).toBe(0.5);
        }
        // A shallow output_json still arrives as parsed, and a sample without one has none.
        const shallow = { output_text: '{"a": [1]}', output_json: { a: [1] }, output_tools: [], choices: [] };
        expect((await runGraderConfig(py('def grade(sample, item):\n    return 1.0 if sample["output_json"] == {"a": [1]} else 0.0'), shallow, {}, opts())).reward).toBe(1);
        expect((await runGraderConfig(py('def grade(sample, item):\n    return 0.0 if "output_json" in sample else 1.0'), { output_text: 'x' }, {}, opts())).reward).toBe(1);
      } finally {
        await cleanup();
      }
    });

    const failing: Record<string, string> = {
      loops: 'def grade(sample, item):\n    while True:\n        pass',
      'forks without end': 'import os\ndef grade(sample, item):\n    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass',
      'opens a socket': 'import socket\ndef grade(sample, item):\n    socket.create_connection(("1.1.1.1", 80), timeout=3)\n    return 1.0',
      raises: 'def grade(sample, item):\n    raise ValueError("no")',
      'returns a string': 'def grade(sample, item):\n    return "1.0"',
      'returns NaN': 'def grade(sample, item):\n    return float("nan")',
      'exits': 'import sys\ndef grade(sample, item):\n    sys.exit(0)',
      'defines no grade': 'def not_grade(sample, item):\n    return 1.0',
    };
    for (const [what, src] of Object.entries(failing)) {
      it(`a grader that ${what} is a grader failure, not a score`, async () => {
        try {
          expect(await code(runGraderConfig(py(src), sample('x'), {}, opts(3000)))).toBe(errors.graderFailed.code);
        } finally {
          await cleanup();
        }
      }, 30_000);
    }
  });
}
