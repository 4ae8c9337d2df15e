// Forging the unit_tests grade from inside, as a learner paid by that reward would: the reported
// attack (steal the runner's output descriptor, read its nonce from a command line, write a verdict
// with invented case names) and a generic probe that tries every way of reaching into every visible
// process, run by the code the hidden tests import. On every driver that isolates; the process
// driver isolates nothing by design and is skipped unless it can at least run as a sandbox uid.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/types.js';
import { canSwitchUid } from '../../src/sandbox/host/uids.js';
import { describeIf } from '../helpers/require.js';
import { repoRoot } from '../helpers/server.js';
import { grade } from './unit-tests-helpers.js';
import { driverCases, pooledDriverCases, sandboxSpec, useDriver } from '../helpers/sandboxes.js';

const fixtures = join(repoRoot, 'test/sandbox/fixtures');
const FORGE = readFileSync(join(fixtures, 'forge.py'), 'utf8');
const PROBE = readFileSync(join(fixtures, 'probe.py'), 'utf8');
const improvement = { unit_tests: { mode: 'improvement' } };
const budget = { used: 4, limit: 50, exceeded: false };

interface Seen {
  pid: number;
  ppid: number | null;
  uid: string;
  cmdline: string;
  environ: string | null;
  reached: string[];
}
interface Report {
  self: { pid: number; ppid: number; cmdline: string; environ: string; mountinfo: string };
  processes: Seen[];
}

/** The probe reports the grading sandboxes hold (one per case process that imported it). */
async function probeReports(sandboxes: Sandbox[]): Promise<Report[]> {
  const out: Report[] = [];
  for (const sb of sandboxes) {
    for (const f of await sb.listFiles('.', { maxDepth: 1 })) {
      if (/^probe-report-\d+\.json$/.test(f.path)) out.push(JSON.parse((await sb.readFile(f.path)).toString()) as Report);
    }
  }
  return out;
}

/** What no command line or environment inside may show: host paths, the hidden expectations. */
function secretsIn(text: string, hostRoot: string): string[] {
  const found: string[] = [];
  if (text.includes(hostRoot)) found.push(`a host path (${hostRoot})`);
  if (text.includes(repoRoot)) found.push(`a host path (${repoRoot})`);
  if (/mode_tie_smallest|rft-grader-[0-9a-f]{8}/.test(text)) found.push('the hidden cases or a runner nonce');
  return found;
}

// Also with pooled sandboxes (issue 24): a grading or rollout sandbox handed over prepared.
for (const d of [...driverCases, ...pooledDriverCases]) {
  const why = d.name === 'process' && !canSwitchUid() ? 'the process driver runs as the server user without root: nothing separates it from the runner' : d.reason;
  const available = d.available && !(d.name === 'process' && !canSwitchUid());
  describeIf(available, `grade forgery on the ${d.name} driver`, why)(`grade forgery (${d.name})`, () => {
    const ctx = useDriver(d);

    const plant = (code: string) => async (sb: Sandbox) => {
      await sb.writeFile('_planted.py', code);
      await sb.writeFile('stats.py', `import _planted\n${(await sb.readFile('stats.py')).toString()}`);
    };

    it('scores the reported attack (stolen runner descriptors, invented case names) as the untouched workspace', async () => {
      const untouched = await grade(ctx.driver, 'stats', undefined, budget, improvement);
      const forged = await grade(ctx.driver, 'stats', plant(FORGE), budget, improvement);
      expect(untouched.score).toBe(0);
      expect(forged.score).toBe(0);
      // The attack writes junk into its own cases' reports too, so it may pass fewer; never more.
      expect(forged.subscores?.tests_passed).toBeLessThanOrEqual(untouched.subscores?.tests_passed ?? 0);
      expect(forged.explanation).not.toContain('invented');
    }, 90_000);

    it('leaves the hidden-test runner out of reach of the code under test, with nothing secret in sight', async () => {
      let reports: Report[] = [];
      await grade(ctx.driver, 'stats', plant(PROBE), budget, improvement, [], {
        inspect: async (grading) => {
          reports = await probeReports(grading);
        },
      });
      expect(reports.length).toBeGreaterThan(0);
      for (const r of reports) {
        const runner = r.processes.find((p) => p.cmdline === 'python3 -I -');
        if (d.name !== 'process') expect(runner, 'the runner is visible to the probe').toBeDefined();
        for (const p of r.processes) {
          // Processes running the code under test (the other cases) may reach each other; nothing
          // else. An empty command line is a process that is exiting: its memory is gone, and the
          // kernel lets the same uid attach to it (the runner closes its channel before it exits).
          if (p.cmdline.includes('__rft_case__') || p.cmdline === '') continue;
          expect({ pid: p.pid, cmdline: p.cmdline.slice(0, 80), reached: p.reached }).toEqual({ pid: p.pid, cmdline: p.cmdline.slice(0, 80), reached: [] });
        }
        if (d.name === 'process') continue; // it runs in the host's view: host paths are everywhere
        for (const text of [r.self.cmdline, r.self.environ, r.self.mountinfo, ...r.processes.flatMap((p) => [p.cmdline, p.environ ?? ''])]) {
          expect(secretsIn(text, ctx.dirs.root)).toEqual([]);
        }
      }
    }, 90_000);

    it('leaves a rollout command nothing outside its own process tree to reach', async () => {
      const sb = await ctx.driver.create(sandboxSpec('trace_probe', { files: { 'probe.py': PROBE } }));
      try {
        const r = await sb.exec(['python3', 'probe.py', 'report']);
        expect(r.exitCode, r.stderr).toBe(0);
        const file = (await sb.listFiles('.', { maxDepth: 1 })).find((f) => f.path.startsWith('report-'));
        const report = JSON.parse((await sb.readFile(file?.path ?? 'missing')).toString()) as Report;
        const ancestors = new Set<number>();
        for (let p: number | null = report.self.ppid; p !== null && !ancestors.has(p); ) {
          ancestors.add(p);
          p = report.processes.find((x) => x.pid === p)?.ppid ?? null;
        }
        for (const p of report.processes) {
          if (ancestors.has(p.pid) || p.cmdline === '') continue; // the command's own shell; an exiting process
          expect({ cmdline: p.cmdline.slice(0, 80), reached: p.reached }).toEqual({ cmdline: p.cmdline.slice(0, 80), reached: [] });
        }
        if (d.name !== 'process') {
          expect(report.processes.map((p) => p.cmdline).filter((c) => /bwrap|prlimit/.test(c))).toEqual([]);
          for (const text of [report.self.mountinfo, ...report.processes.flatMap((p) => [p.cmdline, p.environ ?? ''])]) {
            expect(secretsIn(text, ctx.dirs.root)).toEqual([]);
          }
        }
      } finally {
        await sb.destroy();
      }
    }, 60_000);
  });
}
