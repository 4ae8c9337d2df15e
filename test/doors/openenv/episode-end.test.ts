// Episodes that end without an answer, through the OpenEnv door as OpenEnv's EnvClient drives it
// (test/helpers/openenv-client.ts): the next reset, a close frame, a dropped socket, or no frame for
// RFT_OPENENV_IDLE_MS end the episode, graded as it stands with an empty answer (what a spent budget gets),
// and the record shows that grade; an episode broken by a failure of ours stays ungraded. The init snippet
// (TRL 1.13's environment_factory class) played against the door gives exactly the recorded reward for a
// finished, an unfinished and a lost episode (None for the lost one).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { gradeThroughApi } from '../../helpers/agent-rft.js';
import { EnvClient } from '../../helpers/openenv-client.js';
import { waitFor } from '../../helpers/wait.js';
import { openEnvSection, type ChatToolSpec } from '../../../src/cli/init/openenv.js';

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;
const hasPython = spawnSync('python3', ['--version']).status === 0;

interface RolloutRecord {
  calls: { tool: string; status: string }[];
  grades: { score: number }[];
}
const recordOf = async (server: TestServer, traceId: string): Promise<RolloutRecord> => {
  const res = await fetch(`${server.url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${server.key}` } });
  return (await res.json()) as RolloutRecord;
};
const gradedRecord = (server: TestServer, traceId: string) =>
  waitFor(`the grade of ${traceId}`, async () => {
    const r = await recordOf(server, traceId);
    return r.grades.length > 0 ? r : undefined;
  });

/** An environment whose tool fails on our side when the test's gate file exists (a sandbox gone). */
function gatedEnvironment(dir: string): string {
  const envDir = join(dir, 'gated');
  mkdirSync(envDir);
  writeFileSync(join(envDir, 'job.json'), JSON.stringify({ method: { type: 'reinforcement', reinforcement: { tools: [{ name: 'gated_failure' }], grader: { name: 'exact' } } } }));
  const tools = [{ type: 'function', function: { name: 'gated_failure', description: 'Fails on our side.', parameters: { type: 'object', properties: { gate: { type: 'string', description: 'a file' } }, required: ['gate'] } } }];
  writeFileSync(join(envDir, 'train.jsonl'), `${JSON.stringify({ messages: [{ role: 'user', content: 'q' }], tools, reference_answer: '42' })}\n`);
  return envDir;
}

describe('OpenEnv door: an episode that ends without an answer', () => {
  let server: TestServer;
  let idle: TestServer;
  let gated: TestServer;
  const dir = mkdtempSync(join(tmpdir(), 'rft-openenv-end-'));
  const gate = join(dir, 'gate');
  beforeAll(async () => {
    const units = join(repoRoot, 'test/fixtures/units');
    [server, idle, gated] = await Promise.all([
      startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } }),
      startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal', RFT_OPENENV_IDLE_MS: '300' } }),
      startTestServer({
        toolsDir: join(units, 'infra-tools'),
        gradersDir: join(units, 'graders'),
        env: { RFT_PRIVATE_PORT: '0', RFT_ENVIRONMENTS: gatedEnvironment(dir), RFT_DEFAULT_GRADER: 'exact', RFT_SQLITE_SYNC: 'normal' },
      }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), idle?.close(), gated?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });
  const finqa = (s: TestServer) => `${s.app.rft.privateDoors!.url}/finqa`;
  const emptyGrade = (index: number) => gradeThroughApi(server, itemOf(train[index]!), '');

  it('the next reset on the socket grades the episode that called a tool and never submitted', async () => {
    const env = await new EnvClient(finqa(server)).connect();
    try {
      await env.reset({ index: 2 });
      await env.callTool('list_docs', {});
      const trace = (await env.state()).trace_id as string;
      await env.reset({ index: 3 });
      const rec = await recordOf(server, trace);
      expect(rec.grades.map((g) => g.score)).toEqual([await emptyGrade(2)]);
      expect(rec.calls.map((c) => [c.tool, c.status])).toEqual([['list_docs', 'ok']]);
    } finally {
      await env.close();
    }
  });

  it('a close frame, or a dropped socket, grades it', async () => {
    for (const end of ['close', 'drop'] as const) {
      const env = await new EnvClient(finqa(server)).connect();
      await env.reset({ index: 4 });
      await env.callTool('list_docs', {});
      const trace = (await env.state()).trace_id as string;
      if (end === 'close') await env.close();
      else env.drop();
      const rec = await gradedRecord(server, trace);
      expect(rec.grades.map((g) => g.score), end).toEqual([await emptyGrade(4)]);
    }
  });

  it('an episode idle for RFT_OPENENV_IDLE_MS is graded; its state and a later step answer that reward', async () => {
    const env = await new EnvClient(finqa(idle)).connect();
    try {
      await env.reset({ index: 5 });
      await env.callTool('list_docs', {});
      const trace = (await env.state()).trace_id as string;
      const rec = await gradedRecord(idle, trace);
      const expected = await gradeThroughApi(idle, itemOf(train[5]!), '');
      expect(rec.grades.map((g) => g.score)).toEqual([expected]);
      expect(await env.state()).toMatchObject({ trace_id: trace, done: true, reward: expected });
      const late = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: `Answer: ${String(train[5]!.reference_answer)}` } });
      expect(late).toMatchObject({ done: true, reward: expected });
      expect((await recordOf(idle, trace)).grades).toHaveLength(1);
    } finally {
      await env.close();
    }
  });

  it('an episode broken by a failure of ours stays ungraded when it ends', async () => {
    writeFileSync(gate, '');
    const env = await new EnvClient(`${gated.app.rft.privateDoors!.url}/gated`).connect();
    await env.reset({ index: 0 });
    await expect(env.step({ type: 'call_tool', tool_name: 'gated_failure', arguments: { gate } })).rejects.toMatchObject({ data: { code: 'RFT_ERR_SANDBOX_UNAVAILABLE' } });
    const first = (await env.state()).trace_id as string;
    await env.reset({ index: 0 });
    const second = (await env.state()).trace_id as string;
    await env.step({ type: 'call_tool', tool_name: 'gated_failure', arguments: { gate } }).catch(() => undefined);
    await env.close();
    // the socket's end has run once its close is acknowledged; a third episode's grade proves the server went on
    const probe = await new EnvClient(`${gated.app.rft.privateDoors!.url}/gated`).connect();
    await probe.reset({ index: 0 });
    const third = (await probe.state()).trace_id as string;
    await probe.close();
    await gradedRecord(gated, third);
    expect((await recordOf(gated, first)).grades).toEqual([]);
    expect((await recordOf(gated, second)).grades).toEqual([]);
  });

  it.runIf(hasPython)("the init snippet's get_reward is the recorded reward: finished, unfinished, lost", async () => {
    const tools = [...(train[0]!.tools as { function: ChatToolSpec }[]).map((t) => t.function), { name: 'gated_failure', parameters: { properties: { gate: { type: 'string' } }, required: ['gate'] } }];
    const readme = join(dir, 'README.md');
    writeFileSync(readme, openEnvSection('finqa', tools));
    writeFileSync(gate, '');
    const answer = `Answer: ${String(train[0]!.reference_answer)}`;
    const episodes = [
      { url: finqa(server), index: 0, calls: [['list_docs', {}], ['submit', { answer }]] },
      { url: finqa(server), index: 1, calls: [['list_docs', {}]] },
      { url: `${gated.app.rft.privateDoors!.url}/gated`, index: 0, calls: [['gated_failure', { gate }]] },
    ];
    // not spawnSync: the servers run in this process
    const { stdout } = await promisify(execFile)('python3', [join(repoRoot, 'test/fixtures/trl/openenv-door.py'), readme, JSON.stringify(episodes)], { encoding: 'utf8', timeout: 60_000 });
    const [finished, unfinished, lost] = JSON.parse(stdout) as { reward: number | null; trace_id: string }[];
    expect(finished!.reward).toBe(await gradeThroughApi(server, itemOf(train[0]!), answer));
    expect((await recordOf(server, finished!.trace_id)).grades.map((g) => g.score)).toEqual([finished!.reward]);
    expect((await recordOf(server, unfinished!.trace_id)).grades.map((g) => g.score)).toEqual([unfinished!.reward]);
    expect(unfinished!.reward).toBe(await emptyGrade(1));
    expect(lost!.reward).toBeNull();
    expect((await recordOf(gated, lost!.trace_id)).grades).toEqual([]);
  }, 90_000);
});
