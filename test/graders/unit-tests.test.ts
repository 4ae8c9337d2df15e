import { afterAll, beforeAll, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeIf } from '../helpers/require.js';
import type { Sandbox, SandboxDriver } from '../../src/sandbox/types.js';
import type { RecordedCall } from '../../src/store/records.js';
import unitTests from '../../graders/unit_tests.js';
import { driverCases, tempDirs } from '../helpers/sandboxes.js';
import { applySolution, grade, okCall, TASKS, tasksDir } from './unit-tests-helpers.js';

/** Writes a file into the rollout workspace as the agent's shell would. */
const put = (sb: Sandbox, path: string, content: string) => sb.writeFile(path, content);

/**
 * A sandbox as seen on an engine host whose clock is `skewS` seconds off this machine's (which no
 * test here can set): every clock reading in what its commands print (seconds since the epoch, with a
 * fraction, as `find -printf %C@` and `date +%s.%N` print them) is shifted.
 */
function clockOff(sb: Sandbox, skewS: number): Sandbox {
  return new Proxy(sb, {
    get(target, key) {
      const v: unknown = Reflect.get(target, key, target);
      if (key !== 'exec' || typeof v !== 'function') return typeof v === 'function' ? v.bind(target) : v;
      return async (...args: Parameters<Sandbox['exec']>) => {
        const r = await target.exec(...args);
        return { ...r, stdout: r.stdout.replace(/\b\d{10}\.\d+\b/g, (t) => String(Number(t) + skewS)) };
      };
    },
  });
}

for (const d of driverCases) {
  describeIf(d.available, `unit_tests grader on the ${d.name} driver`, d.reason)(`unit_tests grader on the ${d.name} driver`, () => {
    let dirs: Awaited<ReturnType<typeof tempDirs>>;
    let driver: SandboxDriver;
    const untouched = new Map<string, number>();
    /** The untouched task's score: what a cheat must not beat. */
    const baseline = async (id: string): Promise<number> => {
      if (!untouched.has(id)) untouched.set(id, (await grade(driver, id)).score);
      return untouched.get(id) as number;
    };

    beforeAll(async () => {
      dirs = await tempDirs();
      driver = d.make(dirs.root);
    });
    afterAll(() => dirs.cleanup());

    for (const id of TASKS) {
      it(`scores the reference fix of ${id} 1.0 and the untouched ${id} between 0 and 1`, async () => {
        const fixed = await grade(driver, id, (sb) => applySolution(sb, id));
        expect(fixed.subscores).toEqual({ tests_passed: 1, budget: 1 });
        expect(fixed.score).toBe(1);
        const none = await grade(driver, id);
        expect(none.score).toBeGreaterThan(0);
        expect(none.score).toBeLessThan(1);
        untouched.set(id, none.score);
      }, 60_000);
    }

    it('scales the score by the budget penalty', async () => {
      const r = await grade(driver, 'slugify', (sb) => applySolution(sb, 'slugify'), { used: 45, limit: 50, exceeded: false });
      expect(r.subscores?.tests_passed).toBe(1);
      expect(r.subscores?.budget).toBeLessThan(1);
      expect(r.score).toBeCloseTo(r.subscores?.budget ?? NaN, 10);
    }, 60_000);

    const improvementMode = { unit_tests: { mode: 'improvement' } };
    const budget = { used: 4, limit: 50, exceeded: false };

    it('in improvement mode scores the untouched workspace 0 and the reference fix 1', async () => {
      const none = await grade(driver, 'stats', undefined, budget, improvementMode);
      expect(none.score).toBe(0);
      expect(none.subscores?.tests_passed).toBeGreaterThan(0);
      const fixed = await grade(driver, 'stats', (sb) => applySolution(sb, 'stats'), budget, improvementMode);
      expect(fixed.score).toBe(1);
    }, 60_000);

    it('grades a row with a template and no mode in improvement mode, so doing nothing scores 0', async () => {
      const none = await grade(driver, 'stats', undefined, budget, { unit_tests: {} });
      expect(none.score).toBe(0);
      expect(none.subscores?.improvement).toBe(0);
    }, 60_000);

    it('in improvement mode counts newly passed cases and takes off the ones a change broke', async () => {
      // Fixing only to_roman passes 4 of the 7 cases the template fails, and breaks the round trip.
      const r = await grade(
        driver,
        'roman',
        async (sb) => {
          const src = (await sb.readFile('roman.py')).toString();
          await put(sb, 'roman.py', src.replace('    (500, "D"),', '    (900, "CM"),\n    (500, "D"),\n    (400, "CD"),').replace('    (50, "L"),', '    (90, "XC"),\n    (50, "L"),\n    (40, "XL"),').replace('    (5, "V"),', '    (9, "IX"),\n    (5, "V"),\n    (4, "IV"),'));
        },
        budget,
        improvementMode,
      );
      expect(r.subscores?.improvement).toBeCloseTo(3 / 7, 10);
      expect(r.score).toBeCloseTo(3 / 7, 10);
    }, 60_000);

    it('gives nothing for rewriting the visible tests so that they pass', async () => {
      const r = await grade(driver, 'roman', async (sb) => {
        await put(sb, 'tests/test_roman.py', 'import unittest\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n');
      });
      expect(r.score).toBe(await baseline('roman'));
    }, 60_000);

    it('gives nothing for sys.exit(0) or os._exit(0) at import of the module', async () => {
      for (const exit of ['import sys\nsys.exit(0)\n', 'import os\nos._exit(0)\n']) {
        const r = await grade(driver, 'stats', async (sb) => {
          const src = (await sb.readFile('stats.py')).toString();
          await put(sb, 'stats.py', exit + src);
        });
        expect(r.score).toBe(0);
      }
    }, 60_000);

    it('gives nothing for process.exit(0) or printed pass lines in a JavaScript module', async () => {
      const r = await grade(driver, 'duration', async (sb) => {
        await put(sb, 'duration.js', 'console.log("ok 1 - all tests pass");\nprocess.exit(0);\n' + (await sb.readFile('duration.js')).toString());
      });
      expect(r.score).toBe(0);
      // It checks a score, not speed: an issue 26 run at load 20 took past 60 s (a Node per case, the baseline's too).
    }, 180_000);

    it('gives nothing for printing fake pass lines, even in the runner format', async () => {
      const fake = 'print("PASS " * 50)\nprint("RFT-RESULT 0 {\\"cases\\": []}")\nprint("OK (all tests passed)")\n';
      const r = await grade(driver, 'intervals', async (sb) => {
        await put(sb, 'intervals.py', fake + (await sb.readFile('intervals.py')).toString());
      });
      expect(r.score).toBe(await baseline('intervals'));
    }, 60_000);

    it('gives nothing for returning objects that compare equal to anything', async () => {
      const r = await grade(driver, 'slugify', async (sb) => {
        await put(sb, 'slug.py', 'class Eq(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n\ndef slugify(text, max_length=None):\n    return Eq("x")\n');
      });
      expect(r.score).toBe(0);
    }, 60_000);

    it('gives nothing for reading the hidden cases from disk while being graded', async () => {
      // A cheater that looks for the runner's files and answers from their expectations. Under the
      // process driver (no isolation, development only) the host's task folder is readable anyway,
      // so only the staged copy is tried there; the isolating drivers must hide both.
      const places = ['glob.glob(os.path.join(os.getcwd(), ".rft-grader-*", "cases.json"))'];
      if (d.name !== 'process') places.push(JSON.stringify([join(tasksDir, 'intervals/hidden/cases.json')]));
      const cheat = [
        'import glob, json, os',
        'def _answers():',
        `    for f in ${places.join(' + ')}:`,
        '        try:',
        '            return {c.get("expr"): c.get("expect") for c in json.load(open(f))["cases"]}',
        '        except Exception:',
        '            pass',
        '    return {}',
        'def merge(intervals):',
        '    a = _answers()',
        '    return a.get("merge(%r)" % ([list(i) for i in intervals],), [])',
        '',
      ].join('\n');
      const r = await grade(driver, 'intervals', (sb) => put(sb, 'intervals.py', cheat));
      expect(r.score).toBeLessThanOrEqual(await baseline('intervals'));
    }, 60_000);

    it('gives nothing for shadowing stdlib modules the runner uses', async () => {
      const r = await grade(driver, 'roman', async (sb) => {
        await put(sb, 'json.py', 'def dumps(*a, **k):\n    return "{\\"cases\\": []}"\nloads = dumps\n');
        await put(sb, 'subprocess.py', 'raise SystemExit(0)\n');
      });
      expect(r.score).toBe(await baseline('roman'));
    }, 60_000);

    it('restores pristine data files the agent edited', async () => {
      const r = await grade(driver, 'orders', (sb) => put(sb, 'data/prices.csv', 'sku,price\nA1,2.25\nB2,4.00\nC3,0.10\n'));
      expect(r.score).toBe(await baseline('orders'));
    }, 60_000);

    it('replaces a planted symlink at a pristine file path without writing outside', async () => {
      const target = join(dirs.outside, 'prices.csv');
      writeFileSync(target, 'outside\n');
      const r = await grade(driver, 'orders', async (sb) => {
        await sb.exec(`rm -rf data && ln -s ${dirs.outside} data`);
      });
      expect(r.score).toBe(await baseline('orders'));
      expect(readFileSync(target, 'utf8')).toBe('outside\n');
      expect(existsSync(join(dirs.outside, 'cases.json'))).toBe(false);
    }, 60_000);

    it('refuses to grade a workspace recreated after the rollout worked in it', async () => {
      // The rollout's calls worked in another sandbox than the one the grader gets (made anew from the template).
      const calls = [okCall('apply_patch', Date.now() - 60_000, 'sb_gone')];
      await expect(grade(driver, 'roman', undefined, budget, {}, calls)).rejects.toMatchObject({ code: 'RFT_ERR_GRADER_FAILED' });
    }, 60_000);

    it('grades a workspace that is still the one the rollout worked in', async () => {
      // The rollout's call finished once its sandbox existed: stamped after the sandbox was made (a
      // stamp taken before grade() fell behind the workspace's ctime when a loaded machine took
      // seconds to create the sandbox, and the grader then rightly refused it).
      const calls: RecordedCall[] = [];
      const r = await grade(driver, 'roman', async (sb) => void calls.push(okCall('shell', Date.now(), sb.id)), budget, {}, calls);
      expect(r.score).toBe(await baseline('roman'));
    }, 60_000);

    // A remote engine's clock may be off this server's: the check compares ages, never the two clocks.
    it('grades a surviving workspace and refuses a recreated one whatever the clock of the sandbox host says', async () => {
      for (const skewS of [120, -120]) {
        const calls: RecordedCall[] = [];
        const kept = await grade(driver, 'roman', async (sb) => void calls.push(okCall('shell', Date.now(), sb.id)), budget, {}, calls, { view: (sb) => clockOff(sb, skewS) });
        expect(kept.score, `clock ${skewS} s off`).toBe(await baseline('roman'));
        const recreated = grade(driver, 'roman', undefined, budget, {}, [okCall('apply_patch', Date.now() - 60_000, 'sb_gone')], { view: (sb) => clockOff(sb, skewS) });
        await expect(recreated, `clock ${skewS} s off`).rejects.toMatchObject({ code: 'RFT_ERR_GRADER_FAILED' });
      }
    }, 120_000);

    // A policy paid less for a zero than for a discarded rollout would try to make its workspace look
    // recreated: something left running that adds an entry to the root after the last call.
    it('is not made to refuse a workspace by a process the rollout left to change it after its last call', async () => {
      const calls: RecordedCall[] = [];
      const r = await grade(driver, 'roman', async (sb) => {
        const left = await sb.exec(`setsid nohup sh -c 'sleep 2; touch late_entry' >/dev/null 2>&1 </dev/null &`);
        expect(left.exitCode).toBe(0);
        calls.push(okCall('shell', Date.now(), sb.id));
        await new Promise((resolve) => setTimeout(resolve, 4_000)); // past the leftover's 2 s and the check's 2-s slack
        expect((await sb.listFiles('.', { maxDepth: 1 })).map((f) => f.path)).not.toContain('late_entry');
      }, budget, {}, calls);
      expect(r.score).toBe(await baseline('roman'));
    }, 60_000);

    it('refuses a row without a hidden tests folder', async () => {
      const ctx = { templatesRoot: join(tasksDir, '../..'), sandbox: async () => { throw new Error('unused'); } } as unknown as Parameters<typeof unitTests.handler>[1];
      await expect(
        Promise.resolve(unitTests.handler({ sample: {}, item: { sandbox: { template: 'coding/tasks/roman/workspace' } }, traceId: 't' }, ctx)),
      ).rejects.toMatchObject({ code: 'RFT_ERR_GRADER_CONFIG' });
    });
  });
}
