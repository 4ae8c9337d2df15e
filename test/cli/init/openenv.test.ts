// The TRL snippet an init'ed project's README gives for the OpenEnv door, read by TRL 1.13's own means: every
// public method but `reset` and `get_reward` becomes a tool through transformers' get_json_schema (the real
// package, from the local wheel index, in a venv kept between runs). Its tools must be the project's tools with
// their arguments, types, required ones and descriptions, plus submit, and nothing else the model could call;
// the prompt TRL builds from a dataset row and reset's return shows the question once; reset sends RFT_RUN as
// the run label; get_reward gives an episode lost to a server failure None (TRL 1.13: unscorable, advantage
// 0), never a 0 reward, and an episode that ended without submit the server's grade of its empty answer.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { initProject } from '../../../src/cli/init/project.js';
import { describeIf } from '../../helpers/require.js';
import { repoRoot, tempDir } from '../harness.js';

const venv = join(tmpdir(), 'rft-test-transformers-venv');
const python = join(venv, 'bin/python');
const hasTransformers = () => existsSync(python) && spawnSync(python, ['-c', 'import transformers.utils'], { timeout: 60_000 }).status === 0;
let reason = '';
if (!hasTransformers()) {
  try {
    execFileSync('python3', ['-m', 'venv', '--clear', venv], { stdio: 'pipe', timeout: 120_000 });
    execFileSync(join(venv, 'bin/pip'), ['install', '-q', 'transformers'], { stdio: 'pipe', timeout: 600_000, env: { ...process.env, PIP_RETRIES: '0' } });
  } catch (e) {
    reason = `transformers could not be installed from the local Python index: ${String((e as { stderr?: Buffer }).stderr ?? e).slice(-300)}`;
  }
}

interface Schema {
  name: string;
  description: string;
  parameters: { properties: Record<string, { type: string; description: string }>; required?: string[] };
}
interface Spec {
  name: string;
  description?: string;
  parameters?: { properties?: Record<string, { type?: string | string[]; description?: string }>; required?: string[] };
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

describeIf(reason === '', "TRL's reading of the OpenEnv snippet", reason)("TRL's reading of an init'ed project's OpenEnv snippet", () => {
  it.each(['finqa', 'coding', 'python', 'blank'])('%s: the tools TRL builds are the project\'s, typed and described, plus submit', (example) => {
    const dir = join(tempDir('rft-openenv-'), example);
    initProject({ dir, example, packageSpec: `file:${repoRoot}` });
    const out = spawnSync(python, [join(repoRoot, 'test/fixtures/trl/environment-schemas.py'), join(dir, 'README.md'), join(dir, 'train.jsonl')], { encoding: 'utf8', timeout: 60_000 });
    expect(out.status, out.stderr).toBe(0);
    const { tools, rewards, question_seen, reset, last_step } = JSON.parse(out.stdout) as {
      tools: Record<string, Schema>;
      rewards: (number | null)[];
      question_seen: number;
      reset: Record<string, unknown>;
      last_step: Record<string, unknown>;
    };

    const expected = new Map<string, Spec>();
    for (const line of readFileSync(join(dir, 'train.jsonl'), 'utf8').split('\n').filter((l) => l.trim())) {
      for (const t of (JSON.parse(line) as { tools: { function: Spec }[] }).tools) if (!expected.has(t.function.name)) expected.set(t.function.name, t.function);
    }
    expect(expected.size).toBeGreaterThan(0);
    expect(Object.keys(tools).sort()).toEqual([...expected.keys(), 'submit'].sort());
    for (const [name, spec] of expected) {
      const got = tools[name]!;
      const props = spec.parameters?.properties ?? {};
      expect(got.description, name).toBe(oneLine(spec.description ?? ''));
      expect(Object.keys(got.parameters.properties).sort(), name).toEqual(Object.keys(props).sort());
      expect([...(got.parameters.required ?? [])].sort(), name).toEqual([...(spec.parameters?.required ?? [])].sort());
      for (const [arg, p] of Object.entries(props)) {
        const type = (Array.isArray(p.type) ? p.type : [p.type]).find((t) => t !== 'null');
        expect(got.parameters.properties[arg]!.type, `${name}.${arg}`).toBe(type);
        expect(got.parameters.properties[arg]!.description, `${name}.${arg}`).toBe(oneLine(p.description ?? arg));
      }
    }
    expect(tools.submit!.parameters.required).toEqual(['answer']);
    // submitted with 1, lost to a server error, submitted with 0, never submitted: the lost one None, the last the
    // server's grade of its empty answer (submitted by get_reward), as the server records it
    expect(rewards).toEqual([1, null, 0, 0.25]);
    expect(last_step).toEqual({ type: 'call_tool', tool_name: 'submit', arguments: { answer: '' } });
    expect(question_seen).toBe(1);
    expect(reset).toEqual({ split: 'train', index: 0, run: 'trl-run' });
  }, 120_000);
});
