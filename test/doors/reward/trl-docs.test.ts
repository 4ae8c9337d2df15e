// The Python the trainer docs show cannot rot: every ```python block of docs/openenv.md,
// docs/ors.md and docs/reward-endpoints.md passes pyflakes (a name used but never imported or defined, the way the
// OpenEnv example once used CallToolAction, is an error), and the TRL reward function of
// docs/reward-endpoints.md, run as written (requests, from the local wheel index, in a venv kept between
// runs) against the reward door, returns the scores the door gives, labels its rollouts with RFT_RUN, is
// loud on a label without the grader's fields and returns None when the server cannot be reached.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';

const venv = join(tmpdir(), 'rft-test-trl-docs-venv');
const python = join(venv, 'bin/python');
const ready = () => existsSync(python) && spawnSync(python, ['-c', 'import pyflakes, requests'], { timeout: 60_000 }).status === 0;
let reason = '';
if (!ready()) {
  try {
    execFileSync('python3', ['-m', 'venv', '--clear', venv], { stdio: 'pipe', timeout: 120_000 });
    execFileSync(join(venv, 'bin/pip'), ['install', '-q', 'pyflakes', 'requests'], { stdio: 'pipe', timeout: 600_000, env: { ...process.env, PIP_RETRIES: '0' } });
  } catch (e) {
    reason = `pyflakes and requests could not be installed from the local Python index: ${String((e as { stderr?: Buffer }).stderr ?? e).slice(-300)}`;
  }
}

const blocks = (doc: string): string[] => [...readFileSync(join(repoRoot, doc), 'utf8').matchAll(/```python\n([\s\S]*?)```/g)].map((m) => m[1]!);
type Row = Record<string, unknown>;
const rows = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').slice(0, 3).map((l) => JSON.parse(l) as Row);
const fieldsOf = ({ messages: _m, tools: _t, ...fields }: Row): Row => fields;

describeIf(reason === '', "the trainer docs' Python", reason)("the trainer docs' Python", () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
    dir = mkdtempSync(join(tmpdir(), 'rft-trl-docs-'));
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['docs/openenv.md', 'docs/reward-endpoints.md', 'docs/ors.md'])('%s: every python block passes pyflakes', (doc) => {
    const found = blocks(doc);
    expect(found.length).toBeGreaterThan(0);
    for (const [i, code] of found.entries()) {
      const file = join(dir, `${doc.replace(/\W/g, '_')}_${i}.py`);
      writeFileSync(file, code);
      const out = spawnSync(python, ['-m', 'pyflakes', file], { encoding: 'utf8', timeout: 60_000 });
      expect(out.stdout + out.stderr, `${doc} block ${i}`).toBe('');
    }
  }, 60_000);

  it("docs/reward-endpoints.md's TRL reward function gets the door's scores, under RFT_RUN", async () => {
    const code = blocks('docs/reward-endpoints.md').find((b) => b.includes('def rft_reward'));
    expect(code).toBeDefined();
    const url = `${server.app.rft.privateDoors!.url}/reward/answer_match`;
    const closed = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    const prompts = rows.map((r) => r.messages);
    const completions = rows.flatMap((r, i) => [[{ role: 'assistant', content: i === 1 ? 'Answer: 1' : `Answer: ${String(r.reference_answer)}` }]]);
    const labels = rows.map((r) => JSON.stringify(fieldsOf(r)));
    const runner = `
import json, os, sys, time
time.sleep = lambda s: None  # the retries' backoff, not waited for here
ns = {}
exec(open(sys.argv[1]).read(), ns)
args = json.loads(sys.argv[2])
good = ns["rft_reward"](prompts=args["prompts"], completions=args["completions"], label=args["labels"])
try:
    ns["rft_reward"](prompts=args["prompts"][:1], completions=args["completions"][:1], label=["{}"])
    loud = False
except Exception as e:
    loud = type(e).__name__
ns["RFT_REWARD_URL"] = "http://127.0.0.1:%d/reward/answer_match" % args["closed"]
down = ns["rft_reward"](prompts=args["prompts"][:1], completions=args["completions"][:1], label=args["labels"][:1])
print(json.dumps({"good": good, "loud": loud, "down": down}))
`;
    writeFileSync(join(dir, 'reward.py'), code!);
    writeFileSync(join(dir, 'runner.py'), runner);
    // Not spawnSync: the server answering the function runs in this process.
    const out = await promisify(execFile)(python, [join(dir, 'runner.py'), join(dir, 'reward.py'), JSON.stringify({ prompts, completions, labels, closed })], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, RFT_REWARD_URL: url, RFT_RUN: 'trl-docs' },
    });
    const { good, loud, down } = JSON.parse(out.stdout) as { good: number[]; loud: string | false; down: (number | null)[] };
    const direct = await Promise.all(
      rows.map(async (r, i) => {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: prompts[i], response: completions[i]![0]!.content, label: labels[i] }) });
        return (await res.json()) as number;
      }),
    );
    expect(good).toEqual(direct);
    expect(new Set(good).size).toBeGreaterThan(1);
    expect(loud).toBe('HTTPError');
    expect(down).toEqual([null]);
    const listed = await fetch(`${server.url}/v1/rollouts?run=trl-docs&door=reward&limit=100`, { headers: { authorization: `Bearer ${server.key}` } });
    // The three graded, and the refused label's grade (recorded as an error, flagged bad_row) under the run too.
    expect(((await listed.json()) as { rollouts: unknown[] }).rollouts.length).toBeGreaterThanOrEqual(3);
  }, 180_000);
});
