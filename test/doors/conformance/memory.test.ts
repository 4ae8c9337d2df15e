// Conformance (issue 41): the memory budget through every door. Each session that calls a bridged MCP
// server holds a sandbox and an instance of the server (a node process, measured at the boot probe:
// src/sandbox/manager/memory.ts); with a budget for two such sessions, a third waits for room
// (RFT_SANDBOX_QUEUE_TIMEOUT_MS), then gets RFT_ERR_MEMORY_BUDGET as the door's retry signal, never an
// output the model reads; once a session ends (its sandbox destroyed), the next one gets in.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../../helpers/require.js';
import { waitFor } from '../../helpers/wait.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { fixtureGraders } from '../../helpers/fixtures.js';
import { writeMcpJson } from '../../mcp/helpers.js';
import { driversPresent } from '../../sandbox/helpers.js';
import { DOORS, type Door, type Endpoints, type Episode, type Reply } from './doors.js';

const present = await driversPresent();
const MB = 1024 * 1024;
const TOOLS = ['shell', 'big_echo'];

/** Per door: how its retry signal carries the code, and the code its grade answers once the episode is broken. */
const ROWS: Record<Door['name'], { code: boolean; lost?: string } | { na: string }> = {
  'Agent RFT': { code: true },
  MCP: { code: true },
  'NeMo Gym': { code: true, lost: 'RFT_ERR_NEMO_GYM_ROLLOUT_LOST' },
  ORS: { code: false },
  OpenEnv: { code: true, lost: 'RFT_ERR_OPENENV_ROLLOUT_LOST' },
  'OpenEnv /mcp': { code: true, lost: 'RFT_ERR_OPENENV_ROLLOUT_LOST' },
  reward: { na: 'not applicable: the reward door grades with in-process graders, it holds no sandbox' },
  // verl's client reads the status alone (504, retried): the code is in the body it does not keep.
  SandboxFusion: { code: false },
};

function expectRetry(r: Reply, code: string | undefined): void {
  expect(r.kind, r.kind === 'transport' ? r.detail : JSON.stringify(r)).toBe('retry');
  if (code !== undefined && r.kind === 'retry') expect(r.detail).toContain(code);
}

let server: TestServer;
let doors: Endpoints;
let envDir: string;

describeIf(present.bwrap, 'bubblewrap', 'bubblewrap sandbox driver not available')('memory budget spent, on every door', () => {
  beforeAll(async () => {
    envDir = mkdtempSync(join(tmpdir(), 'rft-conformance-mem-'));
    mkdirSync(join(envDir, 'conf'));
    writeFileSync(join(envDir, 'conf', 'job.json'), JSON.stringify({ method: { reinforcement: { tools: TOOLS.map((name) => ({ name })), grader: { name: 'exact' } } } }));
    const rowTools = TOOLS.map((name) => ({ type: 'function', function: { name, description: name, parameters: { type: 'object', properties: {} } } }));
    writeFileSync(join(envDir, 'conf', 'train.jsonl'), `${JSON.stringify({ messages: [{ role: 'user', content: 'q' }], tools: rowTools, reference_answer: '42' })}\n`);
    server = await startTestServer({
      gradersDir: fixtureGraders,
      env: {
        RFT_SQLITE_SYNC: 'normal',
        RFT_SANDBOX: 'bwrap',
        RFT_SANDBOX_WARM: '0',
        RFT_SANDBOX_QUEUE_TIMEOUT_MS: '1500',
        // Room for a few sessions of a node MCP server (each about 40-60 MB, measured at the boot probe).
        RFT_MEMORY_BUDGET_MB: '150',
        RFT_DEFAULT_GRADER: 'exact',
        RFT_ENVIRONMENTS: envDir,
        RFT_NEMO_GYM_PORT: '0',
        RFT_PRIVATE_PORT: '0',
        RFT_MCP_CONFIG: writeMcpJson({ big: { command: 'node', args: [join(repoRoot, 'test/mcp/fixtures/big-output-server.mjs')], prefix: 'big_', tools: ['echo'] } }),
      },
    });
    doors = { main: server.url, key: server.key, nemoGym: server.app.rft.nemoGym!.url, private: server.app.rft.privateDoors!.url, environment: 'conf', tools: TOOLS };
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    if (envDir) rmSync(envDir, { recursive: true, force: true });
  });

  const provider = () => server.app.rft.sandboxes!;
  const live = () => provider().stats().live;

  it('measured the bridged server at boot (not the default guess)', () => {
    const memory = provider().memory!;
    expect(memory.of('mcp:big')).not.toBe(80 * MB);
    expect(memory.of('mcp:big')).toBeGreaterThan(10 * MB);
    expect(memory.rolloutBytes('bwrap')).toBeLessThan(150 * MB);
  });

  for (const door of DOORS) {
    const row = ROWS[door.name];
    if ('na' in row) {
      it.skip(`${door.name}: ${row.na}`, () => {});
      continue;
    }
    it(`${door.name}: the session past the budget waits, gets RFT_ERR_MEMORY_BUDGET as the retry signal, and gets in once one ends`, { timeout: 120_000 }, async () => {
      await waitFor('no sandbox left by the door before', async () => (live() === 0 ? true : undefined), 30_000, 50);
      // Room for two and a half sessions at the cost measured now (a session reserves what its kinds cost when it
      // starts, and that moves as more are measured: a loaded machine measured the server at half its quiet
      // size, so a fixed budget fitted twelve): two fit, a third does not, and one ending makes room again.
      const perSession = provider().memory!.rolloutBytes('bwrap');
      const { held } = provider().stats().memoryMb!;
      provider().holdOutside!('test:fit', Math.max(0, 150 * MB - held * MB - 2.5 * perSession));
      // The sessions that fill the budget: this door's own (SandboxFusion has no bridged tool: Agent RFT's).
      const filler = door.name === 'SandboxFusion' ? DOORS.find((d) => d.name === 'Agent RFT')! : door;
      const episodes: Episode[] = [];
      const open = async (d: Door): Promise<Episode> => {
        const ep = await d.open(doors);
        episodes.push(ep);
        return ep;
      };
      const call = (ep: Episode): Promise<Reply> => (door.name === 'SandboxFusion' ? ep.call('run_code', { code: 'print(1)' }) : ep.call('big_echo', { message: 'hello' }));
      try {
        // Sessions that each start an instance, until one finds no room (each holds its sandbox and its instance).
        const sessions: Episode[] = [];
        let refused: { reply: Reply; waitedMs: number; ep: Episode } | undefined;
        while (!refused && sessions.length < 12) {
          const ep = await open(filler);
          const started = Date.now();
          const r = await ep.call('big_echo', { message: `session ${sessions.length}` });
          if (r.kind === 'output') sessions.push(ep);
          else refused = { reply: r, waitedMs: Date.now() - started, ep };
        }
        expect(sessions.length).toBeGreaterThanOrEqual(1);
        expect(refused, 'twelve sessions fit two and a half sessions\' room').toBeDefined();
        if (door.name === 'SandboxFusion') {
          // A run's sandbox alone may fit what the sessions leave: that is held, as a shared instance's would be.
          const held = provider().stats().memoryMb!.held;
          provider().holdOutside!('test:rest', (150 - held) * MB);
          const ep = await open(door);
          const started = Date.now();
          refused = { reply: await call(ep), waitedMs: Date.now() - started, ep };
        }
        expectRetry(refused!.reply, row.code ? 'RFT_ERR_MEMORY_BUDGET' : undefined);
        expect(refused!.waitedMs).toBeGreaterThanOrEqual(1_000); // it waited for room first
        if (row.lost) expectRetry(await refused!.ep.submit('42'), row.lost);
        // One session ends (its sandbox and its instance go), and the refused one (a door that builds the
        // sandbox ahead kept it queued, and it came first): the next gets in.
        await provider().destroy(sessions[0]!.traceId!);
        if (refused!.ep.traceId) {
          await refused!.ep.end();
          await provider().destroy(refused!.ep.traceId);
        }
        provider().holdOutside!('test:rest', 0);
        provider().holdOutside!('test:fit', 0);
        const r = await call(await open(door));
        expect(r, JSON.stringify(r)).toMatchObject({ kind: 'output', isError: false });
      } finally {
        provider().holdOutside!('test:rest', 0);
        provider().holdOutside!('test:fit', 0);
        for (const ep of episodes) {
          await ep.end();
          if (ep.traceId) await provider().destroy(ep.traceId);
        }
      }
    });
  }
});
