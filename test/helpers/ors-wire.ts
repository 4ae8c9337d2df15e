// The ORS clients' recordings (test/fixtures/ors/sdk-sync-requests.json, test/fixtures/openreward/
// sdk-requests.json): a run's key and session ids kept as placeholders, put back at replay from this run's
// key and the server's own /create_session replies; the ends the recorded episodes must have in the record;
// and the live run of a client's driver through the recording proxy, its bytes kept or compared.
import { expect } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { recordingProxy, runDriver, toRecorded, type RecordedRequest, type Reply, type WireFixture } from '../fixtures/record-proxy.js';
import type { TestServer } from './server.js';
import { gradeThroughApi } from './agent-rft.js';

/** A request's first line ("POST /create HTTP/1.1"). */
export const lineOf = (text: string) => text.slice(0, text.indexOf('\r\n'));
export const isPing = (text: string) => lineOf(text).startsWith('POST /ping ');
export const SID_HEADER = /^X-Session-ID: (\S+)\r$/im;

/**
 * The `openreward` SDK's X-Secrets header: base64 of JSON that holds the key (its api_key and OPENREWARD_API_KEY
 * entries). Kept as `{{B64}}` and that JSON, its key as {{KEY}}; the replay encodes it again with the run's key.
 */
const SECRETS_HEADER = /^(X-Secrets: )(\S+)\r$/gim;
const B64 = /\{\{B64\}\}([^\r]*)/g;

/** The recorded requests with the run's key and session ids as {{KEY}} and {{SID1}}, {{SID2}}... (in order of first use). */
export const withPlaceholders = (requests: RecordedRequest[], key: string): RecordedRequest[] => placeholders(requests, key).requests;

/** withPlaceholders's requests, and the session ids {{SID1}}, {{SID2}}... stand for. */
export function placeholders(requests: RecordedRequest[], key: string): { requests: RecordedRequest[]; sids: string[] } {
  const sids: string[] = [];
  const kept = requests.map((r) => {
    let text = r.request!.replace(SECRETS_HEADER, (line, name: string, value: string) => {
      const json = Buffer.from(value, 'base64').toString('utf8');
      return json.includes(key) ? `${name}{{B64}}${json.replaceAll(key, '{{KEY}}')}\r` : line;
    });
    text = text.replaceAll(key, '{{KEY}}');
    const sid = SID_HEADER.exec(text)?.[1];
    if (sid && !sids.includes(sid)) sids.push(sid);
    sids.forEach((s, i) => (text = text.replaceAll(s, `{{SID${i + 1}}}`)));
    return { ...r, request: text };
  });
  return { requests: kept, sids };
}

/** The session ids the replies to the requests' /create_session gave, in order. */
export const sidsOf = (requests: RecordedRequest[], replies: readonly Reply[]) =>
  replies.flatMap((r, i) => (lineOf(requests[i]!.request!).startsWith('POST /create_session ') ? (/^event: task_id\ndata: (\S+)$/m.exec(r.body)?.[1] ?? []) : []));

/** A replay's `fill`: this run's key and the session ids its /create_session replies gave, for the placeholders. */
export const fillFor = (server: TestServer, requests: RecordedRequest[]) => (text: string, replies: readonly Reply[]) => {
  const sids = sidsOf(requests, replies);
  const keyed = text.replaceAll('{{KEY}}', server.key);
  return keyed.replace(B64, (_, json: string) => Buffer.from(json, 'utf8').toString('base64')).replace(/\{\{SID(\d+)\}\}/g, (_, n: string) => sids[Number(n) - 1]!);
};

/** What each placeholder session was for: the /create it got ({split, index} or a task spec), by its number. */
export function sessionsOf(requests: RecordedRequest[]): Map<number, Record<string, unknown>> {
  const created = new Map<number, Record<string, unknown>>();
  for (const r of requests.filter((q) => lineOf(q.request!).startsWith('POST /create '))) {
    const n = Number(/\{\{SID(\d+)\}\}/.exec(r.request!)![1]);
    created.set(n, JSON.parse(r.request!.slice(r.request!.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>);
  }
  return created;
}

/** The replayed sessions opened by a task spec and by split and index 2: their ids, in the order of the replies. */
export function replayedEpisodes(requests: RecordedRequest[], replies: readonly Reply[]): { answered: string; abandoned: string; sids: string[] } {
  const sids = sidsOf(requests, replies);
  const created = [...sessionsOf(requests)];
  const byTask = created.find(([, body]) => body.task_spec !== undefined)![0];
  const byIndex = created.find(([, body]) => body.index === 2)![0];
  return { answered: sids[byTask - 1]!, abandoned: sids[byIndex - 1]!, sids };
}

/** The `end` events' results of the replies to calls (a request line matching `call`), in order. */
export const callEnds = (requests: RecordedRequest[], replies: readonly Reply[], call: RegExp) =>
  replies.filter((_, i) => call.test(lineOf(requests[i]!.request!))).map((r) => JSON.parse(/^event: end\ndata: (.*)$/m.exec(r.body)![1]!) as Record<string, unknown>);

type Row = Record<string, unknown>;
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;

/**
 * The recorded episodes' ends in the record: the answered one graded 1 (its submit), the abandoned one (row
 * `abandonedRow`) graded once with the empty answer, and every session gone from the store.
 */
export async function checkEnds(server: TestServer, answered: string, abandoned: string, abandonedRow: Row, sids: string[]): Promise<void> {
  const grades = async (sid: string) => {
    const res = await fetch(`${server.url}/v1/rollouts/${sid}`, { headers: { authorization: `Bearer ${server.key}` } });
    return ((await res.json()) as { grades: { score: number }[] }).grades.map((g) => g.score);
  };
  expect(await grades(answered)).toEqual([1]);
  expect(await grades(abandoned)).toEqual([await gradeThroughApi(server, itemOf(abandonedRow), '')]);
  for (const sid of sids) expect(await server.app.rft.store.getSession('ors', sid), sid).toBeUndefined();
}

/** A driver run of an ORS client through a recording proxy: its printed result, and what it sent (with placeholders). */
export interface LiveRun {
  out: Record<string, unknown>;
  stderr: string;
  recorded: RecordedRequest[];
  /** Every session id it used. */
  sids: string[];
}

/** Runs `python driver proxyUrl ...args` with `env` against the server's main listener through a recording proxy. */
export async function runThroughProxy(server: TestServer, python: string, driver: string, args: string[], env: NodeJS.ProcessEnv): Promise<LiveRun> {
  const proxy = await recordingProxy(server.url);
  try {
    const run = await runDriver(python, [driver, proxy.url, ...args], env);
    expect(run.code, run.stderr).toBe(0);
    const out = run.out as Record<string, unknown>;
    expect(out.error, run.stderr).toBeUndefined();
    const sids = [...new Set(proxy.requests.map((r) => SID_HEADER.exec(r.bytes.toString())?.[1]).filter((s) => s !== undefined))];
    return { out, stderr: run.stderr, recorded: withPlaceholders(toRecorded(proxy), server.key), sids };
  } finally {
    await proxy.close();
  }
}

/** What both ORS drivers report of finqa's train split: the catalogue, the answered episode's reward 1, the abandoned one's mistake. */
export function expectCatalogueAndEpisodes(out: Record<string, unknown>, train: Row[]): void {
  expect(out).toMatchObject({
    splits: ['train', 'validation'],
    num_tasks: train.length,
    listed: train.length,
    task_keys: ['id', 'index', 'split'],
    range: [train.length - 3, train.length - 2],
    first: { reward: null, finished: false },
    submit: { reward: 1, finished: true },
    abandoned_first: false,
    mistake: expect.stringContaining('ToolCallError') as unknown,
  });
  expect(out.session_tools).toEqual([...(train[1]!.tools as { function: { name: string } }[]).map((t) => t.function.name), 'submit']);
}

/**
 * A live run's requests kept as the fixture (RFT_TEST_WIRE_RECORD=1, `source` saying what sent them), then
 * compared with it: the same bytes, pings apart (as many as its timing gave, the same bytes).
 */
export function keepOrCompare(fixturePath: string, recorded: RecordedRequest[], source: () => string): void {
  if (process.env.RFT_TEST_WIRE_RECORD === '1') {
    const fixture: WireFixture = { source: source(), requests: recorded };
    writeFileSync(fixturePath, `${JSON.stringify(fixture, null, 2)}\n`);
  }
  const fixture = (JSON.parse(readFileSync(fixturePath, 'utf8')) as WireFixture).requests.map((r) => r.request!);
  const texts = recorded.map((r) => r.request!);
  expect(texts.filter((t) => !isPing(t))).toEqual(fixture.filter((t) => !isPing(t)));
  expect(new Set(texts.filter(isPing))).toEqual(new Set(fixture.filter(isPing)));
}
