// NeMo Gym's own client on the wire (test/fixtures/README.md). Always: test/fixtures/gym/requests.json, the
// bytes Gym's real `ng_run` + `ng_collect_rollouts` (simple_agent, aiohttp; ng_run's readiness probe,
// requests) sent to the door for 12 finqa rollouts, replayed byte for byte on the connections Gym kept, each
// session's cookie swapped for the one this run's /seed_session set; every reply is what Gym needs (200,
// JSON, the cookie, the tools' text, the reward Gym wrote for that rollout). When RFT_TEST_NEMO_GYM_VENV names
// a venv with nemo-gym installed (docs/nemo-gym.md "A real run") and RFT_TEST_NEMO_GYM_SRC its checkout: the
// real ng_run and ng_collect_rollouts against the door through the recording proxy, the scripted model as the
// policy, Gym's rewards equal to the record's, rollout by rollout, and its requests the fixture's (less the
// ids and signed cookies that change every run; RFT_TEST_WIRE_RECORD=1 writes the fixture afresh).
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../helpers/server.js';
import { withNemoGymDoor } from '../../helpers/nemo-gym-client.js';
import { describeWithCheckout } from '../../helpers/require.js';
import { commitOf, pythonVersions, recordingProxy, replay, toRecorded, type RecordedRequest, type WireFixture } from '../../fixtures/record-proxy.js';
import { startScriptedModel, type TurnContext, type ScriptedTurn } from '../../../src/cli/models/scripted-server.js';
import { toGymRow } from '../../../src/cli/dataset/nemo-gym-row.js';
import { SESSION_COOKIE } from '../../../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../../../src/doors/nemo-gym/sessions.js';

type Row = Record<string, unknown>;
interface GymFixture extends WireFixture {
  /** The reward Gym wrote (ng_collect_rollouts' output) for each rollout, by `<task index>-<rollout index>`. */
  rewards: Record<string, number>;
}

const FIXTURE = join(repoRoot, 'test/fixtures/gym/requests.json');
const venv = process.env.RFT_TEST_NEMO_GYM_VENV;
const src = process.env.RFT_TEST_NEMO_GYM_SRC;
const reason = !venv || !src
  ? 'RFT_TEST_NEMO_GYM_VENV (a venv with nemo-gym installed) and RFT_TEST_NEMO_GYM_SRC (its NVIDIA-NeMo/Gym checkout) are not both set'
  : !existsSync(join(venv, 'bin/ng_run'))
    ? `${venv}/bin/ng_run does not exist`
    : '';

/** The first six finqa rows, each run twice (num_repeats=2): 12 rollouts. */
const ROWS = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').slice(0, 6).map((l) => JSON.parse(l) as Row);
const questionOf = (row: Row) => (row.messages as { content: string }[]).at(-1)!.content;
/**
 * The policy: a first turn calling a tool (search_docs; row 3 a read_doc the schema refuses, row 5 a tool the
 * row does not offer), then the answer: the reference on even rows, a wrong one on odd rows.
 */
function policy(ctx: TurnContext): ScriptedTurn {
  const i = ROWS.findIndex((r) => questionOf(r) === ctx.userText);
  if (ctx.turn === 0) {
    if (i === 3) return { calls: [{ name: 'read_doc', arguments: {} }] };
    if (i === 5) return { calls: [{ name: 'calculator', arguments: { expression: '1+1' } }] };
    return { calls: [{ name: 'search_docs', arguments: { query: ctx.userText.slice(0, 60) } }] };
  }
  return { text: i >= 0 && i % 2 === 0 ? `From the report.\nAnswer: ${String(ROWS[i]!.reference_answer)}` : 'Answer: 17' };
}

const headOf = (text: string) => text.slice(0, text.indexOf('\r\n\r\n'));
const pathOf = (text: string) => text.slice(0, text.indexOf(' HTTP/1.1'));
const bodyOf = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4);
const COOKIE = new RegExp(`${SESSION_COOKIE}=([A-Za-z0-9_-]+)`);
/** A rollout's key in Gym's output and in the rows it sends: `<task index>-<rollout index>`. */
const rolloutOf = (body: Row) => `${String(body._ng_task_index)}-${String(body._ng_rollout_index)}`;

/** The recorded requests with each session cookie's token as {{SESSION:<rollout>}} (the rollout of the /verify that carried it). */
function withSessionPlaceholders(requests: RecordedRequest[]): RecordedRequest[] {
  const rolloutOfToken = new Map<string, string>();
  for (const r of requests) {
    const token = r.request && COOKIE.exec(headOf(r.request))?.[1];
    if (token && pathOf(r.request!).endsWith('/verify')) rolloutOfToken.set(token, rolloutOf(JSON.parse(bodyOf(r.request!)) as Row));
  }
  return requests.map((r) => {
    if (!r.request) return r;
    const head = headOf(r.request).replace(COOKIE, (all, token: string) => {
      const rollout = rolloutOfToken.get(token);
      if (!rollout) throw new Error(`a session cookie no /verify carried: ${pathOf(r.request!)}`);
      return `${SESSION_COOKIE}={{SESSION:${rollout}}}`;
    });
    return { ...r, request: `${head}${r.request.slice(headOf(r.request).length)}` };
  });
}

describe("NeMo Gym's ng_run and ng_collect_rollouts on the wire", () => {
  const s = withNemoGymDoor();

  /** The record's reward for each Gym rollout of the door, by `<task index>-<rollout index>`. */
  async function recordedRewards(): Promise<Record<string, number | null>> {
    const get = async (path: string) => (await fetch(`${s.server.url}${path}`, { headers: { authorization: `Bearer ${s.server.key}` } })).json() as Promise<Row>;
    const list = (await get('/v1/rollouts?door=nemo-gym&limit=500')).rollouts as { trace_id: string }[];
    const out: Record<string, number | null> = {};
    for (const { trace_id } of list) {
      const r = await get(`/v1/rollouts/${trace_id}`);
      const grades = r.grades as { score: number }[];
      out[rolloutOf(r.item as Row)] = grades.length === 1 ? grades[0]!.score : null;
    }
    return out;
  }

  it('its recorded requests, replayed byte for byte: each answered as Gym needs, each rollout the reward Gym wrote', async () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as GymFixture;
    const requests = fixture.requests;
    expect(Object.keys(fixture.rewards)).toHaveLength(12);
    // What the door's session rules rest on, as Gym sent it: JSON on every POST; no cookie of ours on a
    // /seed_session (so one carrying it is the model's call); ours on every later call of the rollout
    const posts = requests.filter((r) => r.request!.startsWith('POST '));
    expect(posts.map((r) => /^content-type: (.*)$/im.exec(headOf(r.request!))?.[1])).toEqual(posts.map(() => 'application/json'));
    for (const r of posts) {
      const path = pathOf(r.request!);
      const cookie = /^cookie: (.*)$/im.exec(headOf(r.request!))?.[1] ?? '';
      if (path.endsWith('/seed_session') || path.endsWith('/aggregate_metrics')) expect(cookie, path).toBe('');
      else expect(cookie, path).toMatch(new RegExp(`(^|; )${SESSION_COOKIE}=\\{\\{SESSION:\\d+-\\d+\\}\\}($|;)`));
    }
    const tokens = new Map<string, string>();
    const replies = await replay(s.door, requests, {
      maxPauseMs: 200,
      // a /seed_session's reply sets its rollout's cookie, which that rollout's later requests carry
      onReply: (i, reply) => {
        const text = requests[i]!.request!;
        if (pathOf(text).endsWith('/seed_session')) tokens.set(rolloutOf(JSON.parse(bodyOf(text)) as Row), COOKIE.exec(reply.headers['set-cookie'] ?? '')?.[1] ?? 'none');
      },
      rewrite: (text) => text.replace(/\{\{SESSION:([\d-]+)\}\}/, (_, rollout: string) => tokens.get(rollout)!),
    });
    const seen = (i: number, what: string) => `${what} #${i}: ${pathOf(requests[i]!.request!)}`;
    const byPath = (p: string) => replies.map((r, i) => ({ r, i, text: requests[i]!.request! })).filter((x) => pathOf(x.text).endsWith(p));
    // ng_run's readiness probe: GET / answered
    expect(replies[0]!.status, seen(0, 'probe')).toBe(200);
    // every /seed_session: 200, JSON, the session cookie set with Path=/ (simple_agent sends back each reply's cookies)
    const seeds = byPath(' /seed_session');
    expect(seeds).toHaveLength(12);
    for (const { r, i } of seeds) {
      expect(r.status, seen(i, 'seed')).toBe(200);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(r.headers['set-cookie']).toMatch(new RegExp(`^${SESSION_COOKIE}=[A-Za-z0-9_-]{32};.*Path=/`));
    }
    // the tool calls: search_docs served (200, text for the model); a read_doc its schema refuses 422, a tool the row
    // does not offer 404, both bodies the model reads and simple_agent passes on
    const tools = replies.map((r, i) => ({ r, i, path: pathOf(requests[i]!.request!) })).filter((x) => /^POST \/(search_docs|read_doc|calculator)$/.test(x.path));
    expect(tools).toHaveLength(12);
    for (const { r, i, path } of tools) {
      expect(r.status, seen(i, 'tool')).toBe(path.endsWith('search_docs') ? 200 : path.endsWith('read_doc') ? 422 : 404);
      expect(r.body.length).toBeGreaterThan(0);
    }
    // every /verify: 200, the request echoed with the reward Gym wrote for that rollout and its components summing to it
    const verifies = byPath(' /verify');
    expect(verifies).toHaveLength(12);
    const rewards: Record<string, number> = {};
    for (const { r, i, text } of verifies) {
      expect(r.status, seen(i, 'verify')).toBe(200);
      const body = JSON.parse(r.body) as Row;
      const sent = JSON.parse(bodyOf(text)) as Row;
      expect(body).toMatchObject({ ...sent, reward: fixture.rewards[rolloutOf(sent)] });
      expect(Object.values(body.reward_components as Record<string, number>).reduce((s, v) => s + v, 0)).toBe(body.reward);
      rewards[rolloutOf(sent)] = body.reward as number;
    }
    expect(rewards).toEqual(fixture.rewards);
    expect(await recordedRewards()).toEqual(fixture.rewards);
    // ng_collect_rollouts' closing call
    const [agg] = byPath(' /aggregate_metrics');
    expect(agg!.r.status).toBe(200);
    expect(JSON.parse(agg!.r.body)).toEqual({ group_level_metrics: [], agent_metrics: {}, key_metrics: {} });
    expect(replies).toHaveLength(requests.length);
  }, 60_000);

  describeWithCheckout(reason === '', "NeMo Gym's ng_run + ng_collect_rollouts", reason)('the real client', () => {
    it('collects 12 rollouts; Gym\'s rewards are the record\'s; its requests are the fixture\'s', async () => {
      const model = await startScriptedModel({ script: policy });
      const proxy = await recordingProxy(s.door);
      const work = mkdtempSync(join(tmpdir(), 'rft-gym-run-'));
      const children: ReturnType<typeof spawn>[] = [];
      try {
        // the door's entry: a stub that binds nothing (ng_run starts every entry; host/port send the calls to the door)
        mkdirSync(join(work, 'resources_servers/rft'), { recursive: true });
        // (it leaves when ng_run's process that started it is gone, so a crashed run leaves nothing behind)
        writeFileSync(join(work, 'resources_servers/rft/app.py'), 'import os, time\nparent = os.getppid()\nwhile os.getppid() == parent:\n    time.sleep(1)\n');
        writeFileSync(join(work, 'resources_servers/rft/requirements.txt'), '');
        // every server runs in the hand-made venv (skip_venv_if_present; uv_venv_dir/<type>/<name>/.venv)
        for (const d of ['resources_servers/rft', 'responses_api_agents/simple_agent', 'responses_api_models/openai_model']) {
          mkdirSync(join(work, 'venvs', d), { recursive: true });
          symlinkSync(venv!, join(work, 'venvs', d, '.venv'));
        }
        writeFileSync(
          join(work, 'nemo-gym.yaml'),
          `rft_env:
  resources_servers:
    rft: {entrypoint: app.py, domain: agent, verified: false, host: 127.0.0.1, port: ${new URL(proxy.url).port}}
rft_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      max_steps: 10
      resources_server: {type: resources_servers, name: rft_env}
      model_server: {type: responses_api_models, name: policy_model}
policy_model:
  responses_api_models:
    openai_model: {entrypoint: app.py, openai_base_url: "${model.baseURL}", openai_api_key: EMPTY, openai_model: policy}
`,
        );
        writeFileSync(join(work, 'finqa.gym.jsonl'), ROWS.map((r) => `${JSON.stringify(toGymRow(r))}\n`).join(''));
        // Ray on loopback, no usage report, no hub
        const env = { ...process.env, PATH: `${venv}/bin:${process.env.PATH}`, VIRTUAL_ENV: venv, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER: '0', RAY_USAGE_STATS_ENABLED: '0', HF_HUB_OFFLINE: '1' };
        // Gym's head server on a free port rather than its fixed 11000
        const headPort = await new Promise<number>((resolve) => {
          const probe = net.createServer().listen(0, '127.0.0.1', () => {
            const { port } = probe.address() as net.AddressInfo;
            probe.close(() => resolve(port));
          });
        });
        const common = ['+config_paths=[nemo-gym.yaml]', '+skip_venv_if_present=true', `+uv_venv_dir=${join(work, 'venvs')}`, '+allow_openai_version_skew=true', `+head_server={host:127.0.0.1,port:${headPort}}`];
        const run = spawn(join(venv!, 'bin/ng_run'), common, { cwd: work, env, detached: true });
        children.push(run);
        let log = '';
        run.stdout!.on('data', (d: Buffer) => (log += d.toString()));
        run.stderr!.on('data', (d: Buffer) => (log += d.toString()));
        for (const started = Date.now(); !/servers ready!/.test(log); await new Promise((r) => setTimeout(r, 500))) {
          if (run.exitCode !== null) throw new Error(`ng_run exited ${run.exitCode}: ${log.slice(-4000)}`);
          if (Date.now() - started > 240_000) throw new Error(`ng_run not ready in 240 s: ${log.slice(-4000)}`);
        }
        const collect = spawn(join(venv!, 'bin/ng_collect_rollouts'), ['+agent_name=rft_agent', '+input_jsonl_fpath=finqa.gym.jsonl', '+output_jsonl_fpath=out.jsonl', '+num_repeats=2', ...common], { cwd: work, env });
        let out = '';
        collect.stdout.on('data', (d: Buffer) => (out += d.toString()));
        collect.stderr.on('data', (d: Buffer) => (out += d.toString()));
        const code = await new Promise<number | null>((r) => collect.on('close', r));
        expect(code, out.slice(-4000)).toBe(0);
        expect(readFileSync(join(work, 'out_failures.jsonl'), 'utf8')).toBe('');
        const written = readFileSync(join(work, 'out.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
        const rewards = Object.fromEntries(written.map((o) => [rolloutOf(o), o.reward as number]).sort(([a], [b]) => String(a).localeCompare(String(b))));
        expect(Object.keys(rewards)).toHaveLength(12);
        // rewards Gym wrote = the record's, rollout by rollout; right answers 1, wrong 0
        expect(await recordedRewards()).toEqual(rewards);
        expect(Object.entries(rewards).map(([k, v]) => [k, v])).toEqual(Object.keys(rewards).map((k) => [k, Number(k.split('-')[0]) % 2 === 0 ? 1 : 0]));
        // every session in the record is one of these 12, graded once
        for (const token of new Set(proxy.requests.map((r) => COOKIE.exec(r.bytes.toString('utf8'))?.[1]).filter(Boolean))) {
          const res = await fetch(`${s.server.url}/v1/rollouts/${traceIdOf(token!)}`, { headers: { authorization: `Bearer ${s.server.key}` } });
          expect(res.status).toBe(200);
        }
        const recorded = withSessionPlaceholders(toRecorded(proxy));
        if (process.env.RFT_TEST_WIRE_RECORD === '1') {
          const fixture: GymFixture = {
            source: `NVIDIA-NeMo/Gym ${commitOf(src!, process.env.RFT_TEST_NEMO_GYM_COMMIT)} ng_run + ng_collect_rollouts (simple_agent, openai_model), ${pythonVersions(join(venv!, 'bin/python'), ['aiohttp', 'requests', 'openai'], env)}: test/doors/nemo-gym/gym-wire.test.ts (RFT_TEST_WIRE_RECORD=1)`,
            requests: recorded,
            rewards,
          };
          writeFileSync(FIXTURE, `${JSON.stringify(fixture, null, 2)}\n`);
        }
        const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as GymFixture;
        expect(rewards).toEqual(fixture.rewards);
        expect(normalized(recorded)).toEqual(normalized(fixture.requests));
      } finally {
        for (const c of children) if (c.exitCode === null && c.pid) process.kill(-c.pid, 'SIGINT');
        await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.on('close', r)) : undefined)));
        await proxy.close();
        await model.close();
        rmSync(work, { recursive: true, force: true });
      }
    }, 420_000);
  });
});

/**
 * A run's requests less what changes from run to run: the order of concurrent rollouts, Content-Length, the
 * session tokens, the agent's and model's signed cookies (their names kept) and the model's ids and times in
 * /verify bodies.
 */
function normalized(requests: RecordedRequest[]): string[] {
  const mask = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(mask) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, ['id', 'call_id', 'created_at'].includes(k) ? '*' : mask(x)])) : v;
  return requests
    .map((r) => {
      const text = r.request!;
      const head = headOf(text)
        .split('\r\n')
        .filter((l) => !/^content-length:/i.test(l))
        .map((l) => l.replace(/=[^;]+/g, '=*'))
        .join('\n');
      const body = bodyOf(text);
      return `${head}\n\n${body ? JSON.stringify(mask(JSON.parse(body))) : ''}`;
    })
    .sort();
}

