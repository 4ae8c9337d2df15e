// `dataset convert --to nemo-gym`: the shipped datasets become rows NeMo Gym's own models accept and
// the NeMo Gym door seeds rollouts from, with the served tools and every field the grader reads; a
// bad line is a coded error naming it, and --out is written whole or not at all.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toGymRow } from '../../../src/cli/dataset/nemo-gym-row.js';
import { SESSION_COOKIE } from '../../../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../../../src/doors/nemo-gym/sessions.js';
import { loadRegistry, type Registry } from '../../../src/registry/loader.js';
import { gymRow } from '../../helpers/gym-schema.js';
import { postOnce } from '../../helpers/nemo-gym-client.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { readJsonl, removeTempDirs, repoRoot, runCli, tempDir, writeJsonl } from '../harness.js';

type Row = Record<string, unknown> & { messages: { role: string; content: string }[]; tools: { function: { name: string; parameters: unknown } }[] };
type Converted = { responses_create_params: { input: Record<string, unknown>[]; tools: { name: string; parameters: unknown; strict: boolean }[] } } & Record<string, unknown>;

let repo: Registry;
let server: TestServer;
let door: string;
beforeAll(async () => {
  repo = await loadRegistry({ toolsDir: join(repoRoot, 'tools'), gradersDir: join(repoRoot, 'graders') });
  // The repository's units and environments (finqa, coding), the NeMo Gym door on an ephemeral port.
  server = await startTestServer({ env: { RFT_NEMO_GYM_PORT: '0' } });
  door = server.app.rft.nemoGym!.url;
});
afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

/** What the door recorded as the rollout's row: the grader's item. */
async function recordedItem(token: string): Promise<unknown> {
  const res = await fetch(`${server.url}/v1/rollouts/${traceIdOf(token)}`, { headers: { authorization: `Bearer ${server.key}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { door: string; item: unknown }).item;
}

describe('dataset convert --to nemo-gym on the shipped datasets', { timeout: 90_000 }, () => {
  it.each([
    ['examples/finqa/train.jsonl', 'answer_match', 26],
    ['examples/finqa/valid.jsonl', 'answer_match', 6],
    ['examples/coding/train.jsonl', 'unit_tests', 10],
  ] as const)('%s: rows Gym accepts, with the served tools and the fields %s reads', async (file, grader, n) => {
    const r = await runCli(['dataset', 'convert', file, '--to', 'nemo-gym']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = readJsonl<Row>(join(repoRoot, file));
    const out = r.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Converted);
    expect(out).toHaveLength(n);
    const itemSchema = repo.graders.get(grader)!.def.itemSchema!;
    out.forEach((g, i) => {
      const row = rows[i]!;
      expect(gymRow.safeParse(g).error).toBeUndefined();
      const { responses_create_params: params, ...fields } = g;
      expect(Object.keys(params).sort()).toEqual(['input', 'tools']);
      // The conversation, message by message, and the tools as the server serves them.
      expect(params.input).toEqual(row.messages.map((m) => ({ role: m.role, content: m.content })));
      expect(params.tools.map((t) => t.name)).toEqual(row.tools.map((t) => t.function.name));
      for (const t of params.tools) {
        expect(repo.tools.has(t.name)).toBe(true);
        expect(t.parameters).toEqual(repo.tools.get(t.name)!.parameters);
        expect(t.strict).toBe(false); // as the Agent RFT trainer reads a Chat tool without "strict"
      }
      // Every other field kept as it was, so the grader finds what it reads.
      const { messages: _m, tools: _t, ...rest } = row;
      expect(fields).toEqual(rest);
      expect(itemSchema.safeParse(fields).success).toBe(true);
    });
    // The door starts a rollout from each converted row, with those fields as the grader's item.
    for (const g of out) {
      const seed = await postOnce(door, '/seed_session', g);
      expect(seed.status, seed.text).toBe(200);
      const { responses_create_params: _p, ...fields } = g;
      expect(await recordedItem(seed.cookies[SESSION_COOKIE]!)).toEqual(fields);
    }
  });

  it('sets agent_ref with --agent, and writes --out', async () => {
    const dir = tempDir();
    const out = join(dir, 'gym.jsonl');
    const r = await runCli(['dataset', 'convert', 'examples/finqa/valid.jsonl', '--to', 'nemo-gym', '--agent', 'rft_agent', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    const rows = readJsonl<Converted>(out);
    expect(rows).toHaveLength(6);
    expect(rows.every((x) => JSON.stringify(x.agent_ref) === '{"name":"rft_agent"}')).toBe(true);
    expect(readdirSync(dir)).toEqual(['gym.jsonl']);
  });
});

describe('toGymRow', () => {
  it('turns an earlier exchange into function_call and function_call_output items, in order', () => {
    const g = toGymRow({
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'be brief' }] },
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search_docs', arguments: '{"query":"q"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'found' },
        { role: 'assistant', content: 'Need more?' },
        { role: 'user', content: 'yes' },
      ],
      tools: [{ type: 'function', function: { name: 'search_docs', parameters: { type: 'object' }, strict: true } }],
      reference_answer: '4.2',
    });
    expect(g).toEqual({
      responses_create_params: {
        input: [
          { role: 'developer', content: [{ type: 'input_text', text: 'be brief' }] },
          { role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: 'data:image/png;base64,AA', detail: 'auto' }] },
          { type: 'function_call', call_id: 'call_1', name: 'search_docs', arguments: '{"query":"q"}' },
          { type: 'function_call_output', call_id: 'call_1', output: 'found' },
          { role: 'assistant', content: 'Need more?' },
          { role: 'user', content: 'yes' },
        ],
        tools: [{ type: 'function', name: 'search_docs', parameters: { type: 'object' }, strict: true }],
      },
      reference_answer: '4.2',
    });
    expect(gymRow.safeParse(g).error).toBeUndefined();
  });
});

describe('dataset convert on a bad file', { timeout: 60_000 }, () => {
  const good = () => readFileSync(join(repoRoot, 'examples/finqa/valid.jsonl'), 'utf8').split('\n')[0]!;

  it.each([
    ['torn JSON', '{"messages": ['],
    ['a role Gym has no equivalent for', JSON.stringify({ messages: [{ role: 'function', name: 'f', content: 'x' }] })],
    ['a tool not in Chat Completions format', JSON.stringify({ messages: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', name: 'flat' }] })],
    ['a field Gym writes itself', JSON.stringify({ messages: [{ role: 'user', content: 'q' }], reward: 1 })],
    ['a row converted already', JSON.stringify({ responses_create_params: { input: 'q' } })],
  ])('%s: RFT_ERR_DATASET naming line 3, exit 2, the existing --out untouched', async (_, bad) => {
    const dir = tempDir();
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, `${good()}\n\n${bad}\n${good()}\n`);
    const out = join(dir, 'out.jsonl');
    writeFileSync(out, 'previous\n');
    const r = await runCli(['dataset', 'convert', file, '--to', 'nemo-gym', '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^error RFT_ERR_DATASET: ${file}:3: .+\\n$`));
    expect(readFileSync(out, 'utf8')).toBe('previous\n');
    expect(readdirSync(dir).sort()).toEqual(['bad.jsonl', 'out.jsonl']);
  });

  it('prints no row at all to standard output when a later line is bad', async () => {
    const file = join(tempDir(), 'bad.jsonl');
    writeFileSync(file, `${good()}\n{"messages": [\n`);
    const r = await runCli(['dataset', 'convert', file, '--to', 'nemo-gym']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error RFT_ERR_DATASET: .*:2: not JSON/);
    expect(r.stdout).toBe('');
  });

  it('refuses an unknown --to (RFT_ERR_CLI_USAGE) and a missing file (RFT_ERR_FILE), writing nothing', async () => {
    const dir = tempDir();
    const file = join(dir, 'rows.jsonl');
    writeJsonl(file, [JSON.parse(good())]);
    const out = join(dir, 'out.jsonl');
    const usage = await runCli(['dataset', 'convert', file, '--to', 'ors', '--out', out]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^error RFT_ERR_CLI_USAGE: /);
    const missing = await runCli(['dataset', 'convert', join(dir, 'none.jsonl'), '--to', 'nemo-gym', '--out', out]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error RFT_ERR_FILE: /);
    expect(existsSync(out)).toBe(false);
  });
});
