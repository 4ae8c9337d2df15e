// TRL 1.13's GRPOTrainer on the wire (test/fixtures/README.md): the real trainer, 2 steps of a tiny model built
// from a config (test/fixtures/trl/grpo-run.py), its rewards from this server by the docs' two paths:
// (a) `reward_funcs`: docs/reward-endpoints.md's `rft_reward` posting each completion to the reward door;
// (b) `environment_factory`: an init'ed project's `RftEnv` (src/cli/init/openenv.ts) over OpenEnv's own
//     GenericEnvClient, episodes that end without submit graded by `get_reward`'s empty answer;
// (c) `openreward`: TRL's own OpenRewardSpec (trl.experimental.openreward) over the `openreward` SDK against the
//     ORS door, its dataset, environment factory and outcome reward as TRL gives them; an episode that ends
//     without submit is graded with the empty answer when TRL's next reset ends its session, or, the last
//     step's (TRL never ends them), when it has been idle RFT_ORS_IDLE_MS.
// Always: the recorded traffic (test/fixtures/trl/reward-funcs.json, environment-factory.json), replayed byte for
// byte against a fresh server: (a) each reply is the reward TRL logged for the completion it posted; and the
// server's record of the run (its rollouts under the run label) holds exactly the rewards TRL logged, rollout
// by rollout ((b): by the trace ids the recorded `state` frames return; (c): by the session ids, labelled with
// the run by the `<run>/finqa` name OpenRewardSpec is given). When RFT_TEST_TRL_PYTHON names a Python with trl (and, for
// (b), RFT_TEST_OPENENV_SRC an OpenEnv checkout's src/; for (c), RFT_TEST_OPENREWARD_SRC an openreward checkout):
// the trainer itself, through the recording proxy, the rewards it logged equal to the record's
// (RFT_TEST_WIRE_RECORD=1 writes the fixtures afresh from this run).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { describeWithCheckout } from '../helpers/require.js';
import { commitOf, pythonVersions, recordingProxy, replay, toRecorded, type RecordedRequest, type WireFixture } from '../fixtures/record-proxy.js';
import { openEnvSection, type ChatToolSpec } from '../../src/cli/init/openenv.js';
import { fillFor, placeholders, sessionsOf, sidsOf } from '../helpers/ors-wire.js';

const DRIVER = join(repoRoot, 'test/fixtures/trl/grpo-run.py');
const python = process.env.RFT_TEST_TRL_PYTHON;
const openenvSrc = process.env.RFT_TEST_OPENENV_SRC;
const trlReason = !python
  ? 'RFT_TEST_TRL_PYTHON (a Python with trl 1.13, torch, transformers, datasets) is not set'
  : spawnSync(python, ['-c', 'import trl, torch, transformers, datasets, pandas, requests, websockets'], {}).status !== 0
    ? `${python} cannot import trl, torch, transformers, datasets, pandas, requests, websockets`
    : '';
const envReason = trlReason || (openenvSrc ? '' : "RFT_TEST_OPENENV_SRC (an OpenEnv checkout's src/) is not set");
const openrewardSrc = process.env.RFT_TEST_OPENREWARD_SRC;
const openrewardReason =
  trlReason ||
  (!openrewardSrc
    ? 'RFT_TEST_OPENREWARD_SRC (a checkout of the openreward SDK) is not set'
    : spawnSync(python!, ['-c', 'import openreward, trl.experimental.openreward'], { env: { ...process.env, PYTHONPATH: openrewardSrc } }).status !== 0
      ? `${python} cannot import openreward (from ${openrewardSrc}) and trl.experimental.openreward`
      : '');
/** Long enough for a step's generation between two requests of a session; short enough to wait for at the end. */
const ORS_IDLE_MS = 8_000;

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const fieldsOf = ({ messages: _m, tools: _t, ...fields }: Row): Row => fields;
const ROWS = train.slice(0, 4);
const GRADER = 'answer_contains';

/** What TRL logged (log_completions: <output_dir>/completions/*.parquet), one entry per completion, in its order. */
interface Logged {
  step: number;
  completion: unknown;
  reward: number | null;
  /** environment_factory: the episode's trace id in the record (the driver's `state` after get_reward). */
  trace_id?: string;
}
interface TrlFixture extends WireFixture {
  run: string;
  logged: Logged[];
}

interface Path {
  name: 'reward_funcs' | 'environment_factory' | 'openreward';
  fixture: string;
  run: string;
  reason: string;
  /** The driver's dataset rows. */
  rows: Row[];
  /** The snippet as the docs / an init'ed README give it. */
  snippet(): string;
  /** The door's base URL. */
  door(server: TestServer): string;
  /** The listener the door is on (what the recording proxy stands in front of). */
  listener(server: TestServer): string;
  /** The server's settings for this path. */
  env?: Record<string, string>;
}

const block = (text: string, marker: string): string => {
  const found = [...text.matchAll(/```python\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes(marker));
  if (!found) throw new Error(`no python block with ${marker}`);
  return found;
};

const PATHS: Path[] = [
  {
    name: 'reward_funcs',
    fixture: join(repoRoot, 'test/fixtures/trl/reward-funcs.json'),
    run: 'trl-grpo-reward',
    reason: trlReason,
    rows: ROWS.map((r) => ({ prompt: r.messages, label: JSON.stringify(fieldsOf(r)) })),
    snippet: () => block(readFileSync(join(repoRoot, 'docs/reward-endpoints.md'), 'utf8'), 'def rft_reward'),
    door: (s) => `${s.app.rft.privateDoors!.url}/reward/${GRADER}`,
    listener: (s) => s.app.rft.privateDoors!.url,
  },
  {
    name: 'environment_factory',
    fixture: join(repoRoot, 'test/fixtures/trl/environment-factory.json'),
    run: 'trl-grpo-env',
    reason: envReason,
    rows: ROWS.map((r, index) => ({ prompt: r.messages, split: 'train', index })),
    snippet: () => block(openEnvSection('finqa', (train[0]!.tools as { function: ChatToolSpec }[]).map((t) => t.function)), 'class RftEnv'),
    door: (s) => `${s.app.rft.privateDoors!.url}/finqa`,
    listener: (s) => s.app.rft.privateDoors!.url,
  },
  {
    name: 'openreward',
    fixture: join(repoRoot, 'test/fixtures/trl/openreward.json'),
    run: 'trl-grpo-openreward',
    reason: openrewardReason,
    rows: ROWS.map((r, index) => ({ prompt: r.messages, split: 'train', index })),
    snippet: () => '', // TRL's own OpenRewardSpec: no snippet of ours
    door: (s) => s.url, // the ORS door, at the main listener's root
    listener: (s) => s.url,
    env: { RFT_ORS_IDLE_MS: String(ORS_IDLE_MS) },
  },
];

interface Graded {
  trace_id: string;
  run: string | null;
  grades: { id: number; score: number | null; sample?: { output_text?: string } }[];
}

/**
 * The server's record of a run: each rollout under its label, or (`traces`: openreward, whose episodes carry no
 * label) each of these trace ids once each has a grade (an idle session's comes with the sweep).
 */
async function recordOf(server: TestServer, by: { run: string } | { traces: string[]; once?: boolean }): Promise<Graded[]> {
  const auth = { authorization: `Bearer ${server.key}` };
  const get = async (url: string) => (await fetch(`${server.url}${url}`, { headers: auth })).json();
  const traces = 'run' in by ? ((await get(`/v1/rollouts?run=${by.run}&limit=500`)) as { rollouts: { trace_id: string }[] }).rollouts.map((r) => r.trace_id) : by.traces;
  // (`once`: read as they are, sessions that stay ungraded)
  const deadline = Date.now() + ('run' in by || by.once ? 0 : 4 * ORS_IDLE_MS + 30_000);
  for (;;) {
    const records = (await Promise.all(traces.map((t) => get(`/v1/rollouts/${t}`)))) as Graded[];
    if (records.every((r) => r.grades?.length > 0) || Date.now() >= deadline) return records;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * What a client's requests look like, without what the model wrote: an HTTP request's line and header names and
 * its JSON body's keys, a frame's opcode and its message's type and data keys. The live run's must be the fixture's.
 */
function shapes(requests: RecordedRequest[]): string[] {
  const keys = (v: unknown) => (v && typeof v === 'object' ? Object.keys(v).sort().join(',') : typeof v);
  const shape = (r: RecordedRequest): string => {
    if (r.request !== undefined) {
      const [head, body] = [r.request.slice(0, r.request.indexOf('\r\n\r\n')), r.request.slice(r.request.indexOf('\r\n\r\n') + 4)];
      const [line, ...headers] = head.split('\r\n');
      return [line, headers.map((h) => h.slice(0, h.indexOf(':')).toLowerCase()).sort().join(','), body ? keys(JSON.parse(body)) : ''].join(' | ');
    }
    if (r.opcode !== 1) return `opcode ${r.opcode}`;
    const m = JSON.parse(r.payload ?? '') as { type?: string; data?: { type?: string; tool_name?: string } };
    return `opcode 1 ${m.type} ${keys(m.data)} ${m.data?.type ?? ''}`;
  };
  return [...new Set(requests.map(shape))].sort();
}

/** The text TRL's `rft_reward` posts for a logged completion (the last message's content). */
const textOf = (completion: unknown): string => (Array.isArray(completion) ? String((completion.at(-1) as { content: unknown }).content) : String(completion));

/** A reward as TRL holds it: a float32 tensor (grpo_trainer.py's rewards_per_func), so logged at float32's precision. */
const f32 = (reward: number | null | undefined): number | null => (typeof reward === 'number' ? Math.fround(reward) : null);

/**
 * TRL's logged rewards against the record (at float32: what TRL trains on), rollout by rollout: every rollout of
 * the run is one TRL logged, with the reward it logged. reward_funcs: each completion a rollout of its own whose
 * graded answer is the completion (matched by text: TRL posts them in parallel). environment_factory: each logged
 * completion's episode by its trace id (the driver reads it after get_reward); a lost episode (None) ungraded.
 */
function expectRecordMatches(path: Path, logged: Logged[], record: Graded[]): void {
  expect(record.length).toBe(logged.length);
  if (path.name === 'reward_funcs') {
    expect(record.every((r) => r.grades.length === 1), JSON.stringify(record)).toBe(true);
    const key = (text: string, reward: number | null) => JSON.stringify([text, reward]);
    expect(record.map((r) => key(r.grades[0]!.sample?.output_text ?? '', f32(r.grades[0]!.score))).sort()).toEqual(logged.map((l) => key(textOf(l.completion), l.reward)).sort());
  } else {
    const byTrace = new Map(record.map((r) => [r.trace_id, r]));
    expect(logged.map((l) => byTrace.get(l.trace_id!)?.grades.map((g) => f32(g.score)))).toEqual(logged.map((l) => (l.reward === null ? [] : [l.reward])));
    // openreward: found by their ids, labelled by the `<run>/<environment>` name OpenRewardSpec was given
    expect(record.map((r) => r.run)).toEqual(record.map(() => path.run));
  }
}

/** The run's rollouts in the record: by its label, or (openreward: no label) by the logged episodes' session ids. */
const recordFor = (path: Path, server: TestServer, run: string, logged: Logged[]) =>
  recordOf(server, path.name === 'openreward' ? { traces: logged.map((l) => l.trace_id!) } : { run });

describe.each(PATHS)("TRL 1.13 GRPOTrainer's $name on the wire", (path) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal', ...path.env } });
  });
  afterAll(() => server?.close());

  it("its recorded traffic, replayed byte for byte: the rewards TRL logged, and the record's rollouts hold them", async () => {
    const fixture = JSON.parse(readFileSync(path.fixture, 'utf8')) as TrlFixture;
    expect(fixture.logged.length).toBe(2 * 4); // 2 steps of 2 prompts x 2 generations
    expect(new Set(fixture.logged.map((l) => l.reward)).size).toBeGreaterThan(1); // rewards that tell rollouts apart
    const replies = await replay(path.listener(server), fixture.requests, { maxPauseMs: 1_000, ...(path.name === 'openreward' ? { fill: fillFor(server, fixture.requests) } : {}) });
    if (path.name === 'openreward') {
      expect(replies.map((r) => r.status)).toEqual(replies.map(() => 200));
      // the logged episodes' sessions ({{SIDn}} in the fixture) are this replay's n-th sessions
      const sids = sidsOf(fixture.requests, replies);
      const logged = fixture.logged.map((l) => ({ ...l, trace_id: sids[Number(/^\{\{SID(\d+)\}\}$/.exec(l.trace_id!)![1]) - 1]! }));
      expectRecordMatches(path, logged, await recordFor(path, server, fixture.run, logged));
      // OpenRewardSpec's probes (a session per task index, its tools listed before training, then /delete) are
      // graded like abandoned episodes (docs/ors.md: nothing on the wire tells them from SkyRL's silent episodes)
      const probes = [...sessionsOf(fixture.requests).keys()].map((n) => sids[n - 1]!).filter((sid) => !logged.some((l) => l.trace_id === sid));
      expect(probes).toHaveLength(ROWS.length);
      expect((await recordOf(server, { traces: probes, once: true })).map((r) => r.grades.length)).toEqual(probes.map(() => 1));
      return;
    }
    if (path.name === 'reward_funcs') {
      expect(replies.map((r) => r.status)).toEqual(replies.map(() => 200));
      // each reply is the reward TRL logged for the completion its request posted (the same text may come from
      // two prompts with two rewards: compared as (text, reward) pairs)
      const posted = fixture.requests.map((r) => JSON.parse(r.request!.slice(r.request!.indexOf('\r\n\r\n') + 4)) as { response: string });
      const key = (text: string, reward: number | null) => JSON.stringify([text, reward]);
      expect(replies.map((r, i) => key(posted[i]!.response, f32(JSON.parse(r.body) as number))).sort()).toEqual(fixture.logged.map((l) => key(textOf(l.completion), l.reward)).sort());
    } else {
      expect(replies.filter((r) => r.status === 101)).toHaveLength(fixture.requests.filter((r) => r.request).length);
      const frames = replies.filter((r) => r.status === 1).map((r) => JSON.parse(r.body) as { type: string; data: { done?: boolean; reward?: number | null; trace_id?: string } });
      expect(frames.every((f) => f.type === 'observation' || f.type === 'state'), JSON.stringify(frames)).toBe(true);
      // this replay's episodes (their trace ids, from the recorded `state` after each get_reward, in TRL's order)
      const traces = frames.filter((f) => f.type === 'state').map((f) => f.data.trace_id!);
      expect(traces).toHaveLength(fixture.logged.length);
      const logged = fixture.logged.map((l, i) => ({ ...l, trace_id: traces[i]! }));
      expectRecordMatches(path, logged, await recordFor(path, server, fixture.run, logged));
      return;
    }
    expectRecordMatches(path, fixture.logged, await recordFor(path, server, fixture.run, fixture.logged));
  }, 120_000);

  describeWithCheckout(path.reason === '', `TRL's GRPOTrainer (${path.name})`, path.reason)('the real trainer', () => {
    it('trains 2 steps; the rewards it logged are the record\'s, rollout by rollout', async () => {
      // a server of its own: the replay's rollouts carry the same run label
      const server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal', ...path.env } });
      const proxy = await recordingProxy(path.listener(server));
      const dir = mkdtempSync(join(tmpdir(), 'rft-trl-grpo-'));
      try {
        const door = path.door(server).replace(path.listener(server), proxy.url);
        writeFileSync(join(dir, 'spec.json'), JSON.stringify({ path: path.name, snippet: path.snippet(), url: door, env: `${path.run}/finqa`, rows: path.rows, answers: ROWS.map((r) => r.reference_answer), out: join(dir, 'out') }));
        const env = {
          ...process.env,
          RFT_REWARD_URL: door,
          RFT_RUN: path.run,
          ...(openenvSrc ? { RFT_TEST_OPENENV_SRC: openenvSrc } : {}),
          ...(path.name === 'openreward' ? { PYTHONPATH: openrewardSrc, OPENREWARD_API_KEY: server.key } : {}),
        };
        // not spawnSync: the server answering the trainer runs in this process
        const { stdout } = await promisify(execFile)(python!, [DRIVER, join(dir, 'spec.json')], { encoding: 'utf8', env, timeout: 900_000, maxBuffer: 64 << 20 });
        const logged = JSON.parse(stdout.trim().split('\n').at(-1)!) as Logged[];
        expect(logged.length).toBe(2 * 4);
        expectRecordMatches(path, logged, await recordFor(path, server, path.run, logged));
        // openreward: this run's key and session ids as placeholders (the logged episodes' too), as the replay fills them
        const kept = path.name === 'openreward' ? placeholders(toRecorded(proxy), server.key) : { requests: toRecorded(proxy), sids: [] };
        const recorded = kept.requests;
        if (path.name === 'openreward') for (const l of logged) l.trace_id = `{{SID${kept.sids.indexOf(l.trace_id!) + 1}}}`;
        if (process.env.RFT_TEST_WIRE_RECORD === '1') {
          const libraries = ['trl', 'transformers', 'torch', { reward_funcs: 'requests', environment_factory: 'websockets', openreward: 'aiohttp' }[path.name]];
          const client = {
            reward_funcs: "docs/reward-endpoints.md's rft_reward (requests)",
            environment_factory: `src/cli/init/openenv.ts's RftEnv over meta-pytorch/OpenEnv ${commitOf(openenvSrc!, process.env.RFT_TEST_OPENENV_COMMIT)} GenericEnvClient`,
            openreward: `TRL's OpenRewardSpec over the openreward SDK (${commitOf(openrewardSrc!, process.env.RFT_TEST_OPENREWARD_COMMIT)})`,
          }[path.name];
          const fixture: TrlFixture = {
            source: `TRL GRPOTrainer (${path.name}): ${client}, ${pythonVersions(python!, libraries, env)}: test/fixtures/trl/grpo-run.py through test/doors/trl-grpo-wire.test.ts (RFT_TEST_WIRE_RECORD=1)`,
            run: path.run,
            logged,
            requests: recorded,
          };
          writeFileSync(path.fixture, `${JSON.stringify(fixture, null, 2)}\n`);
        }
        // the requests' kinds are the fixture's (what the model wrote differs from run to run: not compared)
        expect(shapes(recorded)).toEqual(shapes((JSON.parse(readFileSync(path.fixture, 'utf8')) as TrlFixture).requests));
      } finally {
        await proxy.close();
        await server.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }, 900_000);
  });
});
