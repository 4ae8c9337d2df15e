// A project of Python tools: `init --example python`, `npm install` (which makes .venv with FastMCP
// from the machine's Python index), `npm start` on a sandbox driver, and calls through POST /tools
// that run the FastMCP server's tools inside the rollout's sandbox, each call in the rollout's record;
// its grader is graders/number_match.py. No file of it names an absolute path (no mcp.json): it runs
// moved to another folder after `npm install`.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawnServer, type ChildServer } from '../../helpers/child-server.js';
import { describeIf } from '../../helpers/require.js';
import { driversPresent } from '../../sandbox/helpers.js';
import { getJson, removeTempDirs, runCli, tempDir } from '../harness.js';

const present = await driversPresent();
const drivers = (['bwrap', 'docker'] as const).filter((d) => present[d]);

let dir = '';
const servers: ChildServer[] = [];

beforeAll(async () => {
  if (drivers.length === 0) return;
  const base = tempDir('rft-python-');
  // The sandbox reads the mounts (.venv, tools/) as an unprivileged user: every parent must be searchable.
  chmodSync(base, 0o755);
  dir = join(base, 'calc');
  const init = await runCli(['init', dir, '--example', 'python']);
  expect(init.code, init.stderr).toBe(0);
  // postinstall makes .venv from /usr/bin/python3 and installs FastMCP from the local index.
  const install = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, npm_config_update_notifier: 'false' },
    timeout: 300_000,
  });
  expect(install.status, `${install.stdout}\n${install.stderr}`).toBe(0);
  // Nothing names the folder: the project runs where it is moved to.
  renameSync(dir, join(base, 'moved'));
  dir = join(base, 'moved');
}, 360_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  removeTempDirs();
});

it('writes tools/server.py and graders/number_match.py, no mcp.json, no absolute path, and the README\'s two commands', async () => {
  const d = join(tempDir('rft-python-'), 'calc');
  const init = await runCli(['init', d, '--example', 'python']);
  expect(init.code, init.stderr).toBe(0);
  expect(readdirSync(d).sort()).toEqual([
    '.gitignore', 'README.md', 'graders', 'job.json', 'nemo-gym.yaml', 'package.json', 'resources_servers', 'scripted.jsonl', 'tools', 'train.jsonl', 'tsconfig.json',
  ]);
  expect(readdirSync(join(d, 'tools')).sort()).toEqual(['requirements.txt', 'server.py']);
  expect(readdirSync(join(d, 'graders'))).toEqual(['number_match.py']);
  for (const f of ['package.json', 'README.md', 'nemo-gym.yaml', 'tools/server.py', 'graders/number_match.py']) expect(readFileSync(join(d, f), 'utf8'), f).not.toContain(d);
  const pkg = JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  expect(pkg.scripts.postinstall).toBe('npm run setup:python');
  expect(pkg.scripts['setup:python']).toMatch(/^\/usr\/bin\/python3 -m venv \.venv && PIP_RETRIES=0 /);
  const readme = readFileSync(join(d, 'README.md'), 'utf8');
  expect(readme).toMatch(/```sh\nnpm install {8}# also makes \.venv with FastMCP[^\n]*\nnpm start /);
  expect(readme).toContain('## Python tools');
}, 60_000);

it("npm run check asks the server RFT_SERVER or PORT names, with RFT_API_KEY if set, else data/api-key", async () => {
  const d = join(tempDir('rft-python-'), 'calc');
  const init = await runCli(['init', d, '--example', 'python']);
  expect(init.code, init.stderr).toBe(0);
  const { check } = (JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  expect(check).toMatch(/^rft-endpoints dataset check train\.jsonl /);
  // The script as npm runs it (sh -c), the command replaced by one that prints its arguments.
  const argsOf = (env: Record<string, string>): string[] => {
    const r = spawnSync('sh', ['-c', check!.replace(/^rft-endpoints/, "printf '%s\\n'")], { cwd: d, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', ...env } });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout.trimEnd().split('\n');
  };
  expect(argsOf({ RFT_SERVER: 'http://127.0.0.1:9100', RFT_API_KEY: 'k1' })).toEqual(['dataset', 'check', 'train.jsonl', '--server', 'http://127.0.0.1:9100', '--key', 'k1']);
  expect(argsOf({ PORT: '9200', RFT_API_KEY: 'k2' })).toEqual(['dataset', 'check', 'train.jsonl', '--server', 'http://127.0.0.1:9200', '--key', 'k2']);
  mkdirSync(join(d, 'data'));
  writeFileSync(join(d, 'data/api-key'), 'k3\n');
  expect(argsOf({})).toEqual(['dataset', 'check', 'train.jsonl', '--server', 'http://127.0.0.1:8787', '--key', 'k3']);
}, 60_000);

/** Host processes running this project's tools/server.py, with their network namespace. */
function serverProcesses(): { pid: number; net: string }[] {
  const found: { pid: number; net: string }[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(join(dir, 'tools/server.py'))) found.push({ pid: Number(pid), net: readlinkSync(`/proc/${pid}/ns/net`) });
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

for (const driver of ['bwrap', 'docker'] as const) {
  describeIf(present[driver], `Python tools on ${driver}`, `${driver} sandbox driver not available`)(`an init'ed Python project on ${driver}`, () => {
    let s: { url: string; key: string };

    beforeAll(async () => {
      const data = join(dir, `data-${driver}`);
      const server = await spawnServer({ RFT_DATA_DIR: data, RFT_SANDBOX: driver }, { command: ['npm', 'start', '--silent'], cwd: dir, timeoutMs: 120_000 });
      servers.push(server);
      s = { url: server.url, key: readFileSync(join(data, 'api-key'), 'utf8').trim() };
    }, 150_000);

    const call = async (traceId: string, callId: string, name: string, args: unknown) => {
      const res = await fetch(`${s.url}/tools`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'function_call', call_id: callId, name, arguments: JSON.stringify(args), trace_id: traceId, item: { tool_budget: 3 } }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { output: string }).output;
    };

    it('lists the FastMCP tools, runs them in the rollout\'s sandbox, records every call and charges the budget', async () => {
      const tools = await getJson<{ tools: { function: { name: string } }[] }>(s, '/v1/tools');
      expect(tools.tools.map((t) => t.function.name).sort()).toEqual(['calculate', 'describe_numbers', 'note']);

      const trace = `trace_py_${driver}`;
      expect(JSON.parse(await call(trace, 'c1', 'describe_numbers', { values: [3, 1, 2, 10] }))).toEqual({ count: 4, sum: 16, mean: 4, median: 2.5, stdev: 3.5355339059, min: 1, max: 10 });
      // The instance runs while the rollout's sandbox lives: in its own network namespace, not the host's.
      const procs = serverProcesses();
      expect(procs.length).toBeGreaterThan(0);
      if (process.getuid?.() === 0) for (const p of procs) expect(p.net).not.toBe(readlinkSync('/proc/self/ns/net'));
      // Its working directory is the rollout's workspace: another rollout has notes of its own.
      expect(await call(trace, 'c2', 'note', { text: 'revenue 1480' })).toBe('revenue 1480\n');
      expect(await call(`${trace}_other`, 'c1', 'note', {})).toBe('(no notes yet)');
      // The budget (tool_budget 3) is charged as for any tool: the fourth call never reaches the server.
      expect(await call(trace, 'c3', 'calculate', { expression: '1/0' })).toMatch(/division by zero/);
      expect(await call(trace, 'c4', 'calculate', { expression: '1+1' })).toMatch(/budget/i);

      const record = await getJson<{ budget: { used: number }; calls: { call_id: string; tool: string; status: string; output: string; sandbox?: string }[] }>(s, `/v1/rollouts/${trace}`);
      expect(record.calls.map((c) => [c.call_id, c.tool, c.status])).toEqual([
        ['c1', 'describe_numbers', 'ok'],
        ['c2', 'note', 'ok'],
        ['c3', 'calculate', 'tool_error'],
        ['c4', 'calculate', 'budget_exceeded'],
      ]);
      expect(record.calls[0]!.output).toContain('"median":2.5');
      expect(record.calls[0]!.sandbox).toMatch(/^sb_/);
      expect(record.budget.used).toBe(3);
    }, 120_000);

    it('grades with graders/number_match.py in a sandbox', async () => {
      const grade = async (text: string) => {
        const res = await fetch(`${s.url}/graders/number_match`, {
          method: 'POST',
          headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ sample: { output_text: text, output_tools: [], choices: [] }, item: { reference_answer: '18.4' }, trace_id: `trace_grade_${driver}_${text.length}` }),
        });
        const body = (await res.json()) as { score?: number };
        expect(res.status, JSON.stringify(body)).toBe(200);
        return body.score;
      };
      expect(await grade('The growth was 18.4%.')).toBe(1);
      expect(await grade('no number')).toBe(0);
    }, 120_000);
  });
}

