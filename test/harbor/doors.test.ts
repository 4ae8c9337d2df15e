// Harbor tasks through every trainer door, on Docker and on gVisor (issue 40's done-when): Agent RFT,
// NeMo Gym, ORS, OpenEnv (WebSocket and HTTP /mcp) through the conformance drivers
// (test/doors/conformance/doors.ts), and the emulator (`rollout --model scripted:FILE`, the CLI that
// plays the trainer). Each plays examples/harbor tasks with the task's own solution through `shell`, a
// no-op, and a half-right answer, and must get the reward Harbor's rule gives for that work (reward.txt;
// reward.json's `reward`, else the mean of its components), with exactly one grade per episode in the record.
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { toGymRow } from '../../src/cli/dataset/nemo-gym-row.js';
import type { RolloutResult } from '../../src/cli/rollout/run.js';
import { DockerApi } from '../../src/sandbox/drivers/docker/api.js';
import { INSTANCE_LABEL } from '../../src/sandbox/host/workdir.js';
import { instanceIdFor } from '../../src/sandbox/instance-id.js';
import { readJsonl, runCli } from '../cli/harness.js';
import { DOORS, type Door, type Endpoints, type Reply, type TaskAt } from '../doors/conformance/doors.js';
import { describeIf } from '../helpers/require.js';
import { RUN_LABEL, runId } from '../helpers/run-label.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { DOCKER_IMAGE, GVISOR_ENGINE, until } from '../sandbox/helpers.js';
import { baseImageOn } from './task-folders.js';

const EXAMPLES = join(repoRoot, 'examples/harbor');
/** The task's solution/solve.sh, run as Harbor's oracle runs it (bash, not the shell tool's /bin/sh). */
const solution = (task: string): string => `bash <<'SOLVE'\n${readFileSync(join(EXAMPLES, task, 'solution/solve.sh'), 'utf8')}SOLVE`;

/**
 * What each episode does and what Harbor's rule makes of it (the task's tests/test.sh, read by hand):
 * - write-greeting, its solve.sh: reward.txt says 1; nothing at all (no tool call): 0;
 * - config-repair untouched (a no-op command): reward.json's `reward` is (0+0+1)/3 printed as 0.3333;
 * - csv-summary with a wrong total: reward.json has no `reward`, its components rows 1, total 0,
 *   top_region 1: their mean, 2/3.
 */
const PLAYS = [
  { task: 'write-greeting', what: 'its solution (reward.txt)', command: solution('write-greeting'), reward: 1 },
  { task: 'write-greeting', what: 'nothing (no tool call)', command: undefined, reward: 0 },
  { task: 'config-repair', what: "a no-op (reward.json's reward)", command: 'true', reward: 0.3333 },
  { task: 'csv-summary', what: "a wrong total (reward.json's components, their mean)", command: `echo '{"rows": 5, "total": 1, "top_region": "east"}' > summary.json`, reward: 2 / 3 },
] as const;

const gvisorSocket = GVISOR_ENGINE.replace(/^unix:\/\//, '');
const ENGINES = [
  { name: 'docker', socket: '/var/run/docker.sock', env: { RFT_SANDBOX: 'docker' } },
  { name: 'gvisor', socket: gvisorSocket, env: { RFT_SANDBOX: 'docker', RFT_DOCKER_HOSTS: GVISOR_ENGINE, RFT_DOCKER_RUNTIME: 'runsc', RFT_DOCKER_IMAGE: DOCKER_IMAGE } },
] as const;

const PLAYED: Door['name'][] = ['Agent RFT', 'NeMo Gym', 'ORS', 'OpenEnv', 'OpenEnv /mcp'];

interface Rec {
  grades?: { score: number | null }[];
}

/** The containers on an engine that this run's server owns (its sandboxes carry the run's label and their owner's id). */
async function containersOf(socket: string, owner: string): Promise<string[]> {
  const api = new DockerApi(socket);
  try {
    const filters = encodeURIComponent(JSON.stringify({ label: [`${RUN_LABEL}=${runId}`, `${INSTANCE_LABEL}=${owner}`] }));
    const res = await api.call<{ Id: string; Labels: Record<string, string> }[]>('GET', `/containers/json?all=1&filters=${filters}`);
    return res.body.map((c) => `${c.Id.slice(0, 12)} ${JSON.stringify(c.Labels)}`);
  } finally {
    await api.close();
  }
}

for (const eng of ENGINES) {
  const base = await baseImageOn(eng.socket);
  describeIf(base !== undefined, `Harbor tasks through every door on ${eng.name}`, `no engine at ${eng.socket} with a base image`)(
    `Harbor tasks through every door on ${eng.name}`,
    () => {
      let server: TestServer;
      let endpoints: Endpoints;
      let rows: Record<string, unknown>[];
      const at = (task: string): TaskAt => {
        const index = rows.findIndex((r) => r.id === task);
        const { messages: _m, tools: _t, ...item } = rows[index]!;
        return { index, item, gymRow: toGymRow(rows[index]!) as unknown as Record<string, unknown>, graderPath: '/graders/harbor' };
      };
      const record = async (traceId: string): Promise<Rec> =>
        (await (await fetch(`${server.url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${server.key}` } })).json()) as Rec;

      let tasks: string;
      let owner: string;
      beforeAll(async () => {
        // The played tasks, copied as they are; an engine without the examples' base image (the gVisor
        // engines hold only the sandbox image, .ci/setup-engines.sh) builds them FROM the base it has, as
        // root (the examples' base's user; the sandbox image's is 1000).
        tasks = join(await mkdtemp(join(tmpdir(), 'rft-harbor-doors-')), 'harbor');
        for (const p of PLAYS) {
          await cp(join(EXAMPLES, p.task), join(tasks, p.task), { recursive: true });
          const dockerfile = join(tasks, p.task, 'environment/Dockerfile');
          if (base !== 'rft-endpoints-base:bookworm') await writeFile(dockerfile, (await readFile(dockerfile, 'utf8')).replace(/^FROM rft-endpoints-base:bookworm$/m, `FROM ${base}\nUSER root`));
        }
        server = await startTestServer({ env: { ...eng.env, RFT_ENVIRONMENTS: tasks, RFT_NEMO_GYM_PORT: '0', RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
        rows = await server.app.rft.environments.rows('harbor', 'train');
        owner = instanceIdFor(server.dataDir);
        expect(owner).toMatch(/^rft-/);
        endpoints = {
          main: server.url,
          key: server.key,
          nemoGym: server.app.rft.nemoGym!.url,
          private: server.app.rft.privateDoors!.url,
          environment: 'harbor',
          tools: ['shell', 'read_file', 'write_file', 'list_files'],
        };
      }, 120_000);

      afterAll(async () => {
        await server?.close();
        if (tasks) await rm(join(tasks, '..'), { recursive: true, force: true });
        // Every sandbox the server made is gone once it has closed (the task images stay: cached by digest).
        if (owner) await until(async () => (await containersOf(eng.socket, owner)).length === 0, 60_000);
      }, 120_000);

      for (const door of DOORS.filter((d) => PLAYED.includes(d.name))) {
        it(`${door.name}: each episode gets Harbor's reward for its work, graded once`, async () => {
          const results = await Promise.all(
            PLAYS.map(async (p) => {
              const ep = await door.open(endpoints, at(p.task));
              try {
                if (p.command !== undefined) {
                  const called = await ep.call('shell', { command: p.command });
                  expect(called, called.detail).toMatchObject({ kind: 'output', isError: false });
                  if (called.kind === 'output') expect(called.text).toMatch(/exit_code: 0/);
                  // The task's container is on this engine, found by the labels the cleanup check reads.
                  expect(await containersOf(eng.socket, owner)).not.toEqual([]);
                }
                const graded: Reply = await ep.submit('done');
                return { p, graded, traceId: ep.traceId! };
              } finally {
                await ep.end();
              }
            }),
          );
          for (const { p, graded, traceId } of results) {
            expect(graded, `${p.task}, ${p.what}: ${graded.detail}`).toMatchObject({ kind: 'reward' });
            if (graded.kind === 'reward') expect(graded.reward, `${p.task}, ${p.what}`).toBeCloseTo(p.reward, 6);
            const grades = (await record(traceId)).grades ?? [];
            expect(grades.map((g) => g.score), `${p.task}: the record's grades`).toHaveLength(1);
            expect(grades[0]!.score).toBeCloseTo(p.reward, 6);
          }
        }, 300_000);
      }

      it("the emulator (rollout --model scripted:FILE) gets Harbor's reward for each row's work, graded once", async () => {
        const work = await mkdtemp(join(tmpdir(), 'rft-harbor-doors-'));
        try {
          const dataset = join(work, 'harbor.jsonl');
          const script = join(work, 'script.jsonl');
          const out = join(work, 'results.jsonl');
          // A row per task; a task played several ways is one row with a try per play (the script cannot
          // tell two rows with the same prompt apart), and -k covers the most tries of any row.
          const tasks = [...new Set(PLAYS.map((p) => p.task))];
          const playsOf = (task: string) => PLAYS.filter((p) => p.task === task);
          const k = Math.max(...tasks.map((t) => playsOf(t).length));
          const turns = (p: (typeof PLAYS)[number]) => [...(p.command === undefined ? [] : [{ calls: [{ name: 'shell', arguments: { command: p.command } }] }]), { text: 'done' }];
          await writeFile(dataset, tasks.map((t) => JSON.stringify(rows.find((r) => r.id === t))).join('\n') + '\n');
          await writeFile(script, tasks.map((t, row) => JSON.stringify({ row, tries: Array.from({ length: k }, (_, i) => turns(playsOf(t)[i % playsOf(t).length]!)) })).join('\n') + '\n');
          const r = await runCli(['rollout', '--dataset', dataset, '--server', server.url, '--key', server.key, '--model', `scripted:${script}`, '--grader-path', '/graders/harbor', '-k', String(k), '--concurrency', '4', '--out', out]);
          expect(r.code, r.stderr).toBe(0);
          const results = readJsonl<RolloutResult>(out);
          expect(results).toHaveLength(tasks.length * k);
          // The tries go to a row's rollouts in the order the model sees them, not by `try`: a row's results
          // are compared with its plays as sets (the plays of a row differ in their tool calls).
          for (const [row, task] of tasks.entries()) {
            const want = Array.from({ length: k }, (_, i) => playsOf(task)[i % playsOf(task).length]!).map((p) => [p.command === undefined ? 0 : 1, p.reward]);
            const got = results.filter((x) => x.row === row);
            expect(got.map((x) => x.discarded), task).toEqual(got.map(() => false));
            const sorted = (l: number[][]) => l.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!).map(([c, r]) => [c, Number(r!.toFixed(4))]);
            expect(sorted(got.map((x) => [x.tool_calls, x.score!])), task).toEqual(sorted(want));
            for (const x of got) {
              const grades = (await record(x.trace_id)).grades ?? [];
              expect(grades.map((g) => g.score), `${task}: the record's grades`).toEqual([x.score]);
            }
          }
        } finally {
          await rm(work, { recursive: true, force: true });
        }
      }, 300_000);
    },
  );
}
