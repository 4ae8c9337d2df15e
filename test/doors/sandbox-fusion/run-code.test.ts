// The SandboxFusion door (POST /run_code on the private listener) on every sandbox driver present,
// driven by verl's code reward replayed as verl/utils/reward_score/sandbox_fusion does it
// (test/helpers/verl-sandbox-fusion.ts): the coding tasks' reference solutions pass their hidden
// cases and the unfixed code does not; a fork bomb and a memory hog are contained, a program cannot
// read another run's files, the host's (the hidden tests, the server's data) or reach the network;
// every run is recorded; a run we cannot carry out now is a 504, which verl retries.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { canSwitchUid } from '../../../src/sandbox/host/uids.js';
import { parsePatch, planPatch } from '../../../tools/_lib/patch/index.js';
import { describeIf } from '../../helpers/require.js';
import { waitFor } from '../../helpers/wait.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { callSandboxApi, computeScore, type TestCases } from '../../helpers/verl-sandbox-fusion.js';
import { DOCKER_IMAGE, GVISOR_ENGINE, driversPresent, type TestDriver } from '../../sandbox/helpers.js';
import { RUN_CODE_MAX_OUTPUT_BYTES } from '../../../src/doors/sandbox-fusion/run.js';

const present = await driversPresent();
const root = canSwitchUid();
const tasksDir = join(repoRoot, 'examples/coding/tasks');
/** The Python tasks whose module needs no data file (verl sends `files: {}`). */
const TASKS = ['intervals', 'inventory', 'money', 'roman', 'slugify', 'stats', 'temperature', 'wordfreq'];

interface HiddenCase { code?: string; expr: string; expect?: unknown; raises?: string; tol?: number }

/** The task's module before (broken) and after its solution.patch (the reference solution). */
async function moduleOf(task: string): Promise<{ broken: string; fixed: string }> {
  const patch = parsePatch(readFileSync(join(tasksDir, task, 'solution.patch'), 'utf8'));
  const plan = await planPatch(patch, async (p) => readFileSync(join(tasksDir, task, 'workspace', p), 'utf8'));
  const change = plan.changes[0]!;
  return { broken: plan.originals.get(change.path)!, fixed: change.content! };
}

/** The hidden cases as verl's assert cases: the module's own import dropped (its code comes first in the program). */
function verlCases(task: string): TestCases {
  const spec = JSON.parse(readFileSync(join(tasksDir, task, 'hidden/cases.json'), 'utf8')) as { setup: string; cases: HiddenCase[] };
  const setup = spec.setup.split('\n').filter((l) => !/^from \w+ import /.test(l)).join('\n');
  const same =
    'import json, math\n' +
    'def _same(e, g, t):\n' +
    '    if isinstance(e, bool) or isinstance(g, bool): return type(e) is type(g) and e == g\n' +
    '    if isinstance(e, (int, float)) and isinstance(g, (int, float)): return abs(e - g) <= max(t, t * abs(e))\n' +
    '    if isinstance(e, list) and isinstance(g, (list, tuple)): return len(e) == len(g) and all(_same(a, b, t) for a, b in zip(e, g))\n' +
    '    if isinstance(e, dict) and isinstance(g, dict): return e.keys() == g.keys() and all(_same(e[k], g[k], t) for k in e)\n' +
    '    return e == g\n';
  const indent = (s: string) => s.split('\n').map((l) => `    ${l}`).join('\n');
  return {
    assert_case: spec.cases.map((c) => {
      const body = `${setup}\n${c.code ?? ''}\n`;
      if (c.raises) return `${same}${body}try:\n${indent(`_v = (${c.expr})`)}\nexcept ${c.raises}:\n    pass\nelse:\n    raise AssertionError('no ${c.raises}')\n`;
      return `${same}${body}_v = (${c.expr})\nassert _same(json.loads(${JSON.stringify(JSON.stringify(c.expect))}), _v, ${c.tol ?? 1e-9}), repr(_v)\n`;
    }),
  };
}

/** SandboxFusion's reply, or our coded error. */
interface Reply {
  status: string;
  run_result: { status: string; stdout: string; stderr: string; return_code: number | null };
  files: Record<string, string>;
  error?: { code: string };
}

const fence = (code: string) => `Here is the fix.\n\`\`\`python\n${code}\n\`\`\`\n`;

const gvisorEnv = { RFT_SANDBOX: 'docker', RFT_DOCKER_HOSTS: GVISOR_ENGINE, RFT_DOCKER_RUNTIME: 'runsc', RFT_DOCKER_IMAGE: DOCKER_IMAGE };

for (const [index, name] of (['bwrap', 'docker', 'gvisor', 'process'] as TestDriver[]).entries()) {
  describeIf(present[name], `SandboxFusion door on ${name}`, `${name} sandbox driver not available`)(`SandboxFusion door on ${name}`, () => {
    let server: TestServer;
    let url: string;
    /** The process driver isolates nothing: the isolation cases are not its to pass (docs/sandbox.md). */
    const isolates = name !== 'process';
    beforeAll(async () => {
      const env = name === 'gvisor' ? gvisorEnv : { RFT_SANDBOX: name };
      server = await startTestServer({ env: { ...env, RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal', RFT_SANDBOX_MEMORY_MB: '512', RFT_SANDBOX_PIDS: '64' } });
      url = `${server.app.rft.privateDoors!.url}/run_code`;
    }, 120_000);
    afterAll(() => server?.close());

    const post = async (body: Record<string, unknown>) => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ language: 'python', run_timeout: 10, ...body }) });
      return { status: res.status, json: (await res.json()) as Reply };
    };

    // Every task on the first driver present; two on the others (each case is a fresh sandbox).
    const tasks = index === 0 ? TASKS : TASKS.slice(0, 2);
    it("verl's code reward passes the reference solutions and fails the unfixed code", async () => {
      for (const task of tasks) {
        const { broken, fixed } = await moduleOf(task);
        const cases = verlCases(task);
        const good = await computeScore(url, fence(fixed), cases);
        expect({ task, score: good.score, failed: good.cases.filter((c) => c.result !== true).map((c) => c.response) }).toEqual({ task, score: 1, failed: [] });
        for (const c of good.cases) expect(c.statuses).toEqual([200]);
        const bad = await computeScore(url, fence(broken), cases);
        expect(bad.score).toBeLessThan(1);
        expect(bad.cases.some((c) => c.result === -2)).toBe(true);
      }
    }, 600_000);

    it("verl's stdin/stdout cases, and SandboxFusion's reply shape", async () => {
      const r = await computeScore(url, fence('a, b = map(int, input().split())\nprint(a + b)'), { inputs: ['1 2\n', '40 2\n'], outputs: ['3', '41'] });
      expect(r.cases.map((c) => c.result)).toEqual([true, false]);
      expect(r.cases[0]!.response).toEqual({
        status: 'Success', message: '', compile_result: null, executor_pod_name: null, files: {},
        run_result: { status: 'Finished', execution_time: expect.any(Number), return_code: 0, stdout: '3\n', stderr: '' },
      });
      // A timeout is Failed with TimeLimitExceeded and no return code; files go in and come out (base64).
      const slow = await post({ code: 'import time\ntime.sleep(30)', run_timeout: 1 });
      expect(slow.json).toMatchObject({ status: 'Failed', run_result: { status: 'TimeLimitExceeded', return_code: null } });
      const files = await post({
        code: "import os\nos.makedirs('out')\nopen('out/b.txt', 'w').write(open('in/a.txt').read().upper())", files: { 'in/a.txt': Buffer.from('hello').toString('base64') }, fetch_files: ['out/b.txt', 'missing.txt'],
      });
      expect(files.json).toMatchObject({ status: 'Success', files: { 'out/b.txt': Buffer.from('HELLO').toString('base64') } });
      expect(Object.keys(files.json.files)).toEqual(['out/b.txt']);
      // nodejs and bash run too; an unknown language is a coded 400.
      expect((await post({ language: 'nodejs', code: 'console.log(6 * 7)' })).json.run_result.stdout).toBe('42\n');
      expect((await post({ language: 'bash', code: 'echo $((6 * 7))' })).json.run_result.stdout).toBe('42\n');
      expect(await post({ language: 'cpp', code: 'int main(){}' })).toMatchObject({ status: 400, json: { error: { code: 'RFT_ERR_RUN_CODE_LANGUAGE' } } });
      expect(await post({ code: 'x', files: { '../escape.txt': 'eA==' } })).toMatchObject({ status: 400, json: { error: { code: 'RFT_ERR_PATH_ESCAPE' } } });
    }, 120_000);

    it("a correct program's whole output, stdout and stderr, far past 16 KiB: verl scores it 1 (cut at 16 KiB it was a wrong answer, at 100 KB a broken pipe)", async () => {
      const sizes = [20_000, 100_000, 3_000_000];
      const code = 'import sys\nn = int(input())\nsys.stderr.write("e" * n)\nsys.stdout.write("x" * n + "\\n")';
      const r = await computeScore(url, fence(code), { inputs: sizes.map((n) => `${n}\n`), outputs: sizes.map((n) => 'x'.repeat(n)) });
      expect(r.cases.map((c) => [c.result, c.statuses, (c.response?.run_result as { stderr: string } | undefined)?.stderr.length])).toEqual(sizes.map((n) => [true, [200], n]));
    }, 120_000);

    it('past the bound on output, a 504 verl retries and counts as the sandbox\'s failure, never a wrong answer', async () => {
      const flood = `import sys\nsys.stdout.write("x" * (${RUN_CODE_MAX_OUTPUT_BYTES} + 1))`;
      const r = await post({ code: flood });
      expect(r).toMatchObject({ status: 504, json: { error: { code: 'RFT_ERR_RUN_CODE_OUTPUT_TOO_LARGE' } } });
      const verl = await computeScore(url, fence(flood), { inputs: [''], outputs: ['x'] });
      expect(verl.cases.map((c) => [c.result, c.statuses])).toEqual([[-1, [504, 504, 504]]]);
      // a stderr flood too; a flood that never ends is a time limit, the program's own
      expect((await post({ code: `import sys\nsys.stderr.write("e" * (${RUN_CODE_MAX_OUTPUT_BYTES} + 1))` })).status).toBe(504);
      const endless = await post({ code: 'while True:\n    print("y" * 1000)', run_timeout: 2 });
      expect(endless).toMatchObject({ status: 200, json: { status: 'Failed', run_result: { status: 'TimeLimitExceeded' } } });
    }, 120_000);

    it('a program a signal ended reports minus its number as return_code, as SandboxFusion does; an exit status is its own', async () => {
      const kill = (sig: string) => post({ code: `import os, signal\nprint("before", flush=True)\nos.kill(os.getpid(), signal.${sig})` });
      for (const [sig, rc] of [['SIGKILL', -9], ['SIGTERM', -15], ['SIGSEGV', -11]] as const) {
        expect((await kill(sig)).json).toMatchObject({ status: 'Failed', run_result: { status: 'Finished', return_code: rc, stdout: 'before\n' } });
      }
      expect((await post({ code: 'import sys\nsys.exit(137)' })).json).toMatchObject({ status: 'Failed', run_result: { status: 'Finished', return_code: 137 } });
      expect((await post({ code: 'import sys\nsys.exit(3)' })).json.run_result.return_code).toBe(3);
    }, 120_000);

    it('records every run as a rollout of its own with one run_code call', async () => {
      const before = await server.app.rft.store.listRollouts({ limit: 1000, filter: { door: 'sandbox-fusion' } });
      await post({ code: 'print("recorded")' });
      const after = await server.app.rft.store.listRollouts({ limit: 1000, filter: { door: 'sandbox-fusion' } });
      const fresh = after.rollouts.filter((r) => !before.rollouts.some((b) => b.traceId === r.traceId));
      expect(fresh).toHaveLength(1);
      const calls = await server.app.rft.store.listCalls(fresh[0]!.traceId);
      expect(calls).toMatchObject([{ tool: 'run_code', status: 'ok' }]);
      expect(JSON.parse(calls[0]!.output!)).toMatchObject({ status: 'Success', run_result: { stdout: 'recorded\n' } });
    });

    it.skipIf(name === 'process' && !root)('a fork bomb is contained: Failed, quickly, and the next run is fine', async () => {
      const started = Date.now();
      const bomb = await post({ code: 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass', run_timeout: 3 });
      expect(bomb.status).toBe(200);
      expect(bomb.json.status).toBe('Failed');
      expect(Date.now() - started).toBeLessThan(name === 'gvisor' ? 120_000 : 30_000);
      expect((await post({ code: 'print("after")' })).json.run_result.stdout).toBe('after\n');
    }, 180_000);

    it('a memory hog is stopped at the memory limit (the request\'s, below the driver\'s), and the next run is fine', async () => {
      const hog = await post({ code: 'chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 1024 * 1024))', memory_limit_MB: 256, run_timeout: 20 });
      expect(hog.status).toBe(200);
      expect(hog.json.status).toBe('Failed');
      expect(hog.json.run_result.status).not.toBe('TimeLimitExceeded');
      // 128 MB fits under 256 MB; 384 MB does not, though the driver allows 512 MB: on every driver,
      // gVisor too (whose kernel keeps RLIMIT_DATA without applying it: RLIMIT_AS binds there).
      expect((await post({ code: 'x = bytearray(128 * 1024 * 1024)\nprint(len(x))', memory_limit_MB: 256 })).json.status).toBe('Success');
      const over = (await post({ code: 'x = bytearray(384 * 1024 * 1024)\nprint(len(x))', memory_limit_MB: 256 })).json;
      expect(over.status).toBe('Failed');
      expect(over.run_result.stderr).toContain('MemoryError');
      expect((await post({ code: 'print("after")' })).json.run_result.stdout).toBe('after\n');
    }, 120_000);

    it.skipIf(!isolates)("a program cannot read another run's files, the hidden tests or the server's data, nor reach the network", async () => {
      const secret = `secret_${randomBytes(8).toString('hex')}`;
      const hidden = join(tasksDir, 'roman/hidden/cases.json');
      const privatePort = new URL(url).port;
      // A run holding a file with the secret, alive while the other one searches.
      const holder = post({ code: 'import time\ntime.sleep(6)', files: { [`${secret}.txt`]: Buffer.from(secret).toString('base64') }, run_timeout: 10 });
      const probe = [
        'import os, socket',
        'found = []',
        'control = False',
        "for d, subdirs, files in os.walk('/'):",
        "    if d.startswith(('/proc', '/sys', '/dev')): subdirs[:] = []; continue",
        `    if 'control_${secret}.txt' in files: control = True`,
        `    if '${secret}.txt' in files: found.append(os.path.join(d, '${secret}.txt'))`,
        "for pid in os.listdir('/proc'):",
        '    if pid.isdigit():',
        `        for p in ['/proc/%s/cwd/${secret}.txt' % pid, '/proc/%s/root/workspace/${secret}.txt' % pid]:`,
        '            try: found.append(open(p).read())',
        '            except Exception: pass',
        `for p in [${JSON.stringify(hidden)}, ${JSON.stringify(server.dataDir)}]:`,
        '    try: found.append(open(p).read()[:50])',
        '    except Exception: pass',
        '    try: found.extend(os.listdir(p))',
        '    except Exception: pass',
        'try:',
        `    socket.create_connection(('127.0.0.1', ${privatePort}), timeout=3); found.append('network')`,
        'except Exception: pass',
        "print('CONTROL', control, 'FOUND', found)",
      ].join('\n');
      await new Promise((r) => setTimeout(r, 1000));
      // The probe's own file (control) shows its search finds what is there.
      const r = await post({ code: probe, run_timeout: 20, files: { [`control_${secret}.txt`]: 'eA==' } });
      await holder;
      expect(r.json.status).toBe('Success');
      expect(r.json.run_result.stdout).toBe('CONTROL True FOUND []\n');
    }, 120_000);

    it.runIf(index === 0)('a run we cannot carry out now is a 504, which verl retries until it gets the real result', async () => {
      const small = await startTestServer({ env: { RFT_SANDBOX: name === 'gvisor' ? 'docker' : name, ...(name === 'gvisor' ? gvisorEnv : {}), RFT_PRIVATE_PORT: '0', RFT_SANDBOX_CAP: '1', RFT_SANDBOX_QUEUE: '0', RFT_SANDBOX_WARM: '0' } });
      try {
        const smallUrl = `${small.app.rft.privateDoors!.url}/run_code`;
        const busy = fetch(smallUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ language: 'python', code: 'import time\ntime.sleep(2)', run_timeout: 10 }) });
        await waitFor('the first run to get its sandbox', () => (small.app.rft.sandboxes!.stats().live >= 1 ? true : undefined), 30_000, 25);
        // verl's sleeps between tries stand for the time the busy run takes: the retry comes once it is done.
        const r = await callSandboxApi(smallUrl, 'print(7)', null, 10, 1024, 'python', async () => void (await busy));
        expect(r.statuses[0]).toBe(504);
        expect(r.statuses.at(-1)).toBe(200);
        expect(r.response).toMatchObject({ status: 'Success', run_result: { stdout: '7\n' } });
        // The refusal is coded and names its cause; nothing of it is recorded.
        const again = fetch(smallUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ language: 'python', code: 'import time\ntime.sleep(2)' }) });
        await waitFor('the run to get its sandbox', () => (small.app.rft.sandboxes!.stats().live >= 1 ? true : undefined), 30_000, 25);
        const refused = await fetch(smallUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ language: 'python', code: 'print(1)' }) });
        expect(refused.status).toBe(504);
        expect(await refused.json()).toMatchObject({ error: { code: 'RFT_ERR_RUN_CODE_UNAVAILABLE', details: { cause: 'RFT_ERR_SANDBOX_UNAVAILABLE' } } });
        await again;
        const recorded = await small.app.rft.store.listRollouts({ limit: 100, filter: { door: 'sandbox-fusion' } });
        expect(recorded.rollouts).toHaveLength(3);
      } finally {
        await small.close();
      }
    }, 120_000);
  });
}
