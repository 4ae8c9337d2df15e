// The reward door (POST /reward/{grader} on the private listener), driven by slime's and OpenRLHF's
// remote reward calls replayed as their files make them (test/helpers/reward-clients.ts): finqa rows'
// answers get the scores /graders/answer_match gives, each grade is a rollout of its own (door
// `reward`), and what fails on our side or cannot be graded is retried by the client and then fails
// loudly: never a 0 the trainer trains on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { openRlhfFetchRewards, pyJsonDumps, slimeRemoteRm } from '../../helpers/reward-clients.js';

type Row = Record<string, unknown>;
const rows = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row).slice(0, 6);
/** The grader's fields of a row (what a slime or OpenRLHF dataset's label would carry). */
const fieldsOf = ({ messages: _m, tools: _t, ...fields }: Row): Row => fields;
const promptOf = (row: Row): string => ((row.messages as { content: string }[]).at(-1)?.content ?? '');
/** A right answer, a wrong one and one off by a few percent, per row. */
const answersOf = (row: Row): string[] => [
  `The figure is in the report.\nAnswer: ${String(row.reference_answer)}`,
  'Answer: 1',
  `Answer: ${String(row.reference_answer).replace(/\d/, (d) => String((Number(d) + 1) % 10))}`,
];

describe('the reward door', () => {
  let server: TestServer;
  let door: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
    door = server.app.rft.privateDoors!.url;
  });
  afterAll(() => server?.close());

  /** The score Agent RFT's grader route gives the same answer and item. */
  const viaGrade = async (answer: string, item: Row): Promise<number> => {
    const res = await fetch(`${server.url}/graders/answer_match`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
      body: JSON.stringify({ sample: { output_text: answer, output_tools: [], choices: [] }, item, trace_id: `trace_${randomUUID()}` }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { score: number }).score;
  };

  it("slime's remote_rm gets the scores /graders/answer_match gives, with the label as reference answer or as the row's fields", async () => {
    const seen = new Set<number>();
    for (const row of rows) {
      for (const answer of answersOf(row)) {
        // A plain label is the reference answer; a JSON object label (slime keeps it as text) is the item.
        for (const [label, item] of [
          [row.reference_answer, { reference_answer: row.reference_answer }],
          [JSON.stringify(fieldsOf(row)), fieldsOf(row)],
        ] as [unknown, Row][]) {
          const run = await slimeRemoteRm(`${door}/reward/answer_match`, { prompt: row.messages, response: answer, label });
          expect(run.statuses).toEqual([200]);
          const expected = await viaGrade(answer, item);
          expect(run.result).toBe(expected);
          seen.add(expected);
        }
      }
    }
    // Right, wrong and partly right answers were all among them.
    expect(seen.has(1) && seen.has(0) && [...seen].some((s) => s > 0 && s < 1)).toBe(true);
    // --reward-key reward reads an object.
    const row = rows[0]!;
    const obj = await slimeRemoteRm(`${door}/reward/answer_match?format=object`, { prompt: promptOf(row), response: answersOf(row)[0]!, label: row.reference_answer });
    expect(obj.result).toMatchObject({ reward: 1 });
    // The default grader is answer_match here.
    const plain = await slimeRemoteRm(`${door}/reward`, { prompt: promptOf(row), response: answersOf(row)[0]!, label: row.reference_answer });
    expect(plain.result).toBe(1);
  }, 120_000);

  it("OpenRLHF's remote reward call gets {rewards, scores, extra_logs} with /grade's score, the response cut from its query", async () => {
    for (const row of rows) {
      // The executor's prompt is chat-templated text; its query decodes prompt + response with special tokens.
      const prompt = `<|im_start|>user\n${promptOf(row)}<|im_end|>\n<|im_start|>assistant\n`;
      for (const answer of answersOf(row)) {
        const expected = await viaGrade(answer, fieldsOf(row));
        const run = await openRlhfFetchRewards(`${door}/reward/answer_match`, [`${prompt}${answer}<|im_end|>`], [prompt], [JSON.stringify(fieldsOf(row))]);
        expect(run.statuses).toEqual([200]);
        expect(run.result).toEqual({ rewards: [expected], scores: [expected], extra_logs: expect.any(Object) });
        for (const v of Object.values(run.result!.extra_logs)) expect(v).toHaveLength(1);
        // A prompt cut from the left to fit max_len: the query starts with its tail.
        const cut = await openRlhfFetchRewards(`${door}/reward/answer_match`, [`${prompt.slice(-20)}${answer}<|endoftext|>`], [prompt], [JSON.stringify(fieldsOf(row))]);
        expect(cut.result?.rewards).toEqual([expected]);
      }
    }
  }, 120_000);

  it('records each grade as a rollout of its own through the door, for the learning curve', async () => {
    const before = await server.app.rft.store.listRollouts({ limit: 1000, filter: { door: 'reward' } });
    const row = rows[1]!;
    await slimeRemoteRm(`${door}/reward/answer_match`, { prompt: promptOf(row), response: answersOf(row)[0]!, label: row.reference_answer });
    await slimeRemoteRm(`${door}/reward/answer_match`, { prompt: promptOf(row), response: answersOf(row)[1]!, label: row.reference_answer });
    const after = await server.app.rft.store.listRollouts({ limit: 1000, filter: { door: 'reward' } });
    const fresh = after.rollouts.filter((r) => !before.rollouts.some((b) => b.traceId === r.traceId));
    expect(fresh.map((r) => r.lastScore).sort()).toEqual([0, 1]);
    for (const r of fresh) {
      expect(r.door).toBe('reward');
      const rec = await server.app.rft.store.getRollout(r.traceId);
      expect(rec?.grades).toHaveLength(1);
      expect(rec?.grades[0]).toMatchObject({ status: 'ok', source: 'endpoint', grader: 'answer_match' });
      expect(rec?.item).toEqual({ reference_answer: row.reference_answer });
    }
  });

  it('a label that cannot be graded is a 5xx both clients retry and then raise: never a 0 recorded as the model\'s', async () => {
    const before = await server.app.rft.store.listRollouts({ limit: 1000, filter: { door: 'reward' } });
    // No reference answer: answer_match cannot grade it (RFT_ERR_BAD_ROW).
    const slime = await slimeRemoteRm(`${door}/reward/answer_match`, { prompt: 'q', response: 'Answer: 3', label: null });
    expect(slime.raised).toBeDefined();
    expect(slime.statuses).toEqual(Array(10).fill(500));
    const orl = await openRlhfFetchRewards(`${door}/reward/answer_match`, ['qAnswer: 3'], ['q'], ['{"answer_type": "number"}']);
    expect(orl.raised).toMatch(/RuntimeError/);
    expect(orl.statuses).toEqual(Array(5).fill(500));
    const res = await fetch(`${door}/reward/answer_match`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: pyJsonDumps({ prompt: 'q', response: 'x', label: null }) });
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_BAD_ROW');
    // Their rollouts hold the failed grade, never a score.
    const after = await server.app.rft.store.listRollouts({ limit: 1000, filter: { door: 'reward' } });
    const fresh = after.rollouts.filter((r) => !before.rollouts.some((b) => b.traceId === r.traceId));
    expect(fresh.length).toBe(16);
    for (const r of fresh) expect(r.lastScore).toBeNull();
  });

  it('answers coded errors for an unknown grader, a body of neither client and a query without its prompt', async () => {
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${door}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, code: ((await res.json()) as { error: { code: string } }).error.code };
    };
    expect(await post('/reward/nope', { prompt: 'q', response: 'a', label: '1' })).toEqual({ status: 404, code: 'RFT_ERR_UNKNOWN_GRADER' });
    expect(await post('/reward/answer_match', { answer: 'a' })).toEqual({ status: 400, code: 'RFT_ERR_BAD_REQUEST' });
    expect(await post('/reward/answer_match', { query: ['something else'], prompts: ['the prompt'], labels: ['1'] })).toEqual({ status: 400, code: 'RFT_ERR_BAD_REQUEST' });
  });

  it("never shows the grader's explanation (it may quote the reference answer)", async () => {
    const row = rows[0]!;
    for (const format of ['', '?format=object']) {
      const res = await fetch(`${door}/reward/answer_match${format}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: pyJsonDumps({ prompt: promptOf(row), response: 'Answer: 1', label: JSON.stringify(fieldsOf(row)) }),
      });
      const text = await res.text();
      expect(text).not.toContain(String(row.reference_answer));
      expect(text).not.toMatch(/explanation/);
    }
  });
});
