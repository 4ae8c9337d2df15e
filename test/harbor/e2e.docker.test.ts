// A Harbor environment end to end over Agent RFT's HTTP calls, on Docker: the rows the server serves
// (examples/harbor), tool calls in the task's own container (its workdir), then the harbor grader,
// whose score is the task's tests' (reward.txt, reward.json's reward, their 0 for an untouched task).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { postJson } from '../helpers/agent-rft.js';
import { OrsClient, TrlRollout } from '../helpers/ors-client.js';
import { simpleAgentRun } from '../helpers/nemo-gym-client.js';
import { toGymRow } from '../../src/cli/dataset/nemo-gym-row.js';
import { describeIf } from '../helpers/require.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { baseImageOn } from './task-folders.js';

const base = await baseImageOn('/var/run/docker.sock');

describeIf(base === 'rft-endpoints-base:bookworm', 'Harbor rollouts over HTTP on Docker', 'no Docker engine with rft-endpoints-base:bookworm')('Harbor rollouts over HTTP on Docker', () => {
  let server: TestServer;
  let rows: Record<string, Record<string, unknown>>;
  let order: string[];
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_SANDBOX: 'docker', RFT_NEMO_GYM_PORT: '0' } });
    const list = await server.app.rft.environments.rows('harbor', 'train');
    rows = Object.fromEntries(list.map((r) => [r.id as string, r]));
    order = list.map((r) => r.id as string);
  }, 60_000);
  afterAll(() => server?.close());

  const post = (path: string, body: unknown) => postJson(server, path, body);
  /** The row's fields as the trainer sends them with each call: the item, without the conversation and tools. */
  const itemOf = (id: string) => {
    const { messages: _m, tools: _t, ...item } = rows[id]!;
    return item;
  };
  async function call(traceId: string, id: string, name: string, args: unknown): Promise<string> {
    const callId = `call_${randomUUID().slice(0, 8)}`;
    const r = await post('/tools', { type: 'function_call', id: `fc_${callId}`, call_id: callId, name, arguments: JSON.stringify(args), trace_id: traceId, item: itemOf(id) });
    expect(r.status).toBe(200);
    return r.json.output as string;
  }
  const grade = (traceId: string, id: string) => post('/graders/harbor', { sample: { output_text: 'done', output_tools: [], choices: [] }, item: itemOf(id), trace_id: traceId });

  it('serves every example task as a row naming its task, with the harness tools', () => {
    expect(Object.keys(rows).sort()).toContain('write-greeting');
    expect(rows['write-greeting']).toMatchObject({ sandbox: { harbor: 'harbor/write-greeting' } });
  });

  it('a rollout that does the task in its workdir scores 1 (reward.txt)', async () => {
    const t = `trace_${randomUUID()}`;
    expect(await call(t, 'write-greeting', 'shell', { command: 'pwd' })).toContain('/app');
    expect(await call(t, 'write-greeting', 'shell', { command: "printf 'hello harbor\\n' > greeting.txt" })).toMatch(/^exit_code: 0/);
    expect(await grade(t, 'write-greeting')).toEqual({ status: 200, json: { score: 1 } });
  }, 180_000);

  it("an untouched rollout scores the tests' 0, and half the work the tests' fraction", async () => {
    const t = `trace_${randomUUID()}`;
    await call(t, 'write-greeting', 'list_files', {});
    expect(await grade(t, 'write-greeting')).toEqual({ status: 200, json: { score: 0 } });
    const f = `trace_${randomUUID()}`;
    expect(await call(f, 'count-answers', 'write_file', { path: 'answers.txt', content: '5\n42\n7\n8\n' })).toMatch(/^wrote answers\.txt/);
    expect(await grade(f, 'count-answers')).toEqual({ status: 200, json: { score: 0.5 } });
  }, 180_000);

  it("scores reward.json's reward, and the mean of its components without one", async () => {
    const t = `trace_${randomUUID()}`;
    await call(t, 'config-repair', 'shell', { command: "sed -i 's/^port=.*/port=8080/' config.ini" });
    expect((await grade(t, 'config-repair')).json.score).toBeCloseTo(0.6667, 4);
    const m = `trace_${randomUUID()}`;
    await call(m, 'csv-summary', 'write_file', { path: 'summary.json', content: '{"rows": 5, "total": 1, "top_region": "east"}' });
    expect((await grade(m, 'csv-summary')).json.score).toBeCloseTo(2 / 3, 6);
  }, 180_000);

  it('a task with its own workdir runs the tools there (relative paths)', async () => {
    const t = `trace_${randomUUID()}`;
    expect(await call(t, 'workdir-project', 'read_file', { path: 'VERSION' })).toBe('1\t1.2.3');
    await call(t, 'workdir-project', 'shell', { command: "echo 1.3.0 > VERSION && { echo '## 1.3.0'; cat CHANGELOG.md; } > c && mv c CHANGELOG.md" });
    expect(await grade(t, 'workdir-project')).toEqual({ status: 200, json: { score: 1 } });
  }, 180_000);

  it('an ORS session of a task gets the same reward from its submit: the harness tools, the task container, the tests', async () => {
    const ors = new OrsClient(server.url, { token: server.key });
    const play = (id: string, commands: string[]) =>
      ors.session('harbor', { split: 'train', index: order.indexOf(id) }, async (s) => {
        expect((await s.listTools()).map((t) => t.name)).toEqual(['shell', 'read_file', 'write_file', 'list_files', 'submit']);
        const trl = new TrlRollout(s);
        for (const command of commands) expect(await trl.call('shell', { command })).toMatch(/^exit_code: 0/);
        await trl.call('submit', { answer: '' });
        return trl.reward;
      });
    expect(await play('fill-form', ["printf 'name=Ada Lovelace\\nyear=1843\\n' > form.txt"])).toBeCloseTo(0.4, 6);
    expect(await play('weighted-json', ['echo beta > b.txt'])).toBeCloseTo(0.2, 6);
  }, 180_000);

  it("a NeMo Gym rollout (simple_agent's calls) of a task finds its environment by the row's task, and gets the tests' reward", async () => {
    // The harness tools are coding's too: the row's sandbox.harbor, not its tools, names the environment.
    const command = (c: string) => ({ calls: [{ name: 'shell', arguments: JSON.stringify({ command: c }) }] });
    const ep = await simpleAgentRun(server.app.rft.nemoGym!.url, toGymRow(rows['write-greeting']), (step) =>
      step === 1 ? command("printf 'hello harbor\\n' > greeting.txt") : { message: 'done' },
    );
    expect(ep.verify.status).toBe(200);
    expect(ep.result!.reward).toBe(1);
  }, 180_000);
});
