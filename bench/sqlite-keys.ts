// Lab benchmark for the grade path's SQLite cost (bench/README.md, "Grade path"): what one new
// rollout's grade costs SQLite alone under three layouts of the same records, with the trainer's
// random trace ids, 25 grades per transaction (a group commit under load), WAL, synchronous=NORMAL
// and SQLite's own checkpoints, as the store runs. Baseline: today's layout (src/store/sqlite.ts).
//   today      rollouts keyed by trace_id; the dataset row in rollout_items keyed by trace_id; grades
//              and integrity flags found through indexes that begin with trace_id: four B-trees
//              written at a random key per new rollout
//   by-content today's, with dataset rows stored once per content (rollouts keep its hash): a row
//              the trainer sends again for another sample of the same task writes nothing
//   int-key    rollouts numbered as created (trace_id in a unique index), grades, flags and dataset
//              rows keyed by that number or content: one random-key B-tree per new rollout
// Half the grades raise a flag (as in bench/grade-path.ts: a finqa row declares tools, the grade
// has no tool call). Prints microseconds per grade and the ratio against today's.
//
//   node --import tsx bench/sqlite-keys.ts [grades]      (default 20000)
import Database from 'better-sqlite3';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const N = Number(process.argv[2] ?? 20_000);
const GROUP = 25;
const item = readFileSync(join(import.meta.dirname, '../examples/finqa/train.jsonl'), 'utf8').split('\n')[0]!;
const sample = JSON.stringify({ output_text: '$48.6 million' });

type Layout = 'today' | 'by-content' | 'int-key';

const GRADES = (rollout: string) => `CREATE TABLE grades (id INTEGER PRIMARY KEY AUTOINCREMENT, ${rollout}, grader TEXT NOT NULL,
  grader_version TEXT NOT NULL, sample_hash TEXT NOT NULL, sample TEXT NOT NULL, status TEXT NOT NULL, score REAL, created_at INTEGER NOT NULL);
CREATE INDEX grades_window ON grades (created_at, status, grader, grader_version, score);`;
const FLAGS = (rollout: string) => `CREATE TABLE integrity_flags (${rollout}, kind TEXT NOT NULL, events INTEGER NOT NULL, detail TEXT NOT NULL,
  created_at INTEGER NOT NULL, PRIMARY KEY (${rollout.split(' ')[0]}, kind));
CREATE INDEX integrity_flags_created ON integrity_flags (created_at);`;
const ROLLOUT_COLUMNS = `created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, budget_limit INTEGER NOT NULL,
  budget_used INTEGER NOT NULL DEFAULT 0, budget_exceeded INTEGER NOT NULL DEFAULT 0, last_score REAL, call_count INTEGER NOT NULL DEFAULT 0`;

function schema(layout: Layout): string {
  if (layout === 'int-key') {
    return `CREATE TABLE rollouts (rid INTEGER PRIMARY KEY, trace_id TEXT NOT NULL UNIQUE, item_hash TEXT, ${ROLLOUT_COLUMNS});
      CREATE TABLE items (hash TEXT PRIMARY KEY, item TEXT NOT NULL);
      ${GRADES('rid INTEGER NOT NULL')} CREATE INDEX grades_lookup ON grades (rid, grader, grader_version, sample_hash);
      ${FLAGS('rid INTEGER NOT NULL')}`;
  }
  return `CREATE TABLE rollouts (trace_id TEXT PRIMARY KEY, ${layout === 'by-content' ? 'item_hash TEXT, ' : ''}${ROLLOUT_COLUMNS}) WITHOUT ROWID;
    CREATE INDEX rollouts_created ON rollouts (created_at DESC, trace_id DESC);
    ${layout === 'today' ? 'CREATE TABLE rollout_items (trace_id TEXT PRIMARY KEY, item TEXT NOT NULL);' : 'CREATE TABLE items (hash TEXT PRIMARY KEY, item TEXT NOT NULL);'}
    ${GRADES('trace_id TEXT NOT NULL')} CREATE INDEX grades_lookup ON grades (trace_id, grader, grader_version, sample_hash);
    ${FLAGS('trace_id TEXT NOT NULL')}`;
}

function measure(layout: Layout): number {
  const dir = mkdtempSync(join(tmpdir(), 'rft-keys-'));
  const db = new Database(join(dir, 'db.sqlite'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(schema(layout));
    const key = layout === 'int-key' ? 'rid' : 'trace_id';
    const exists = db.prepare(`SELECT 1 FROM rollouts WHERE trace_id = ?`);
    const rollout = db.prepare(
      layout === 'today'
        ? 'INSERT INTO rollouts (trace_id, created_at, updated_at, budget_limit) VALUES (?, ?, ?, 12)'
        : 'INSERT INTO rollouts (trace_id, created_at, updated_at, budget_limit, item_hash) VALUES (?, ?, ?, 12, ?)',
    );
    const row = db.prepare(layout === 'today' ? 'INSERT INTO rollout_items (trace_id, item) VALUES (?, ?)' : 'INSERT OR IGNORE INTO items (hash, item) VALUES (?, ?)');
    const grade = db.prepare(`INSERT INTO grades (${key}, grader, grader_version, sample_hash, sample, status, score, created_at)
      VALUES (?, 'reference_match', 'v1', ?, ?, 'ok', 1, ?)`);
    const score = db.prepare(`UPDATE rollouts SET last_score = 1, updated_at = ? WHERE ${key} = ? RETURNING call_count, budget_exceeded`);
    const flag = db.prepare(`INSERT INTO integrity_flags (${key}, kind, events, detail, created_at) VALUES (?, 'no_tool_score', 1, 'scored 1', ?)
      ON CONFLICT DO UPDATE SET events = events + 1`);
    const one = (traceId: string, now: number, k: number) => {
      exists.get(traceId);
      const hash = createHash('sha256').update(item).digest('hex');
      const inserted = layout === 'today' ? rollout.run(traceId, now, now) : rollout.run(traceId, now, now, hash);
      const id = layout === 'int-key' ? inserted.lastInsertRowid : traceId;
      row.run(layout === 'today' ? traceId : hash, item);
      grade.run(id, randomUUID(), sample, now);
      score.get(now, id);
      if (k % 2 === 0) flag.run(id, now);
    };
    const unit = db.transaction(one);
    const turn = db.transaction((ids: string[], now: number) => ids.forEach((t, k) => unit(t, now, k)));
    const started = performance.now();
    for (let i = 0; i < N; i += GROUP) {
      turn.immediate(Array.from({ length: GROUP }, () => `trace_${randomUUID()}`), Date.now());
    }
    return ((performance.now() - started) * 1000) / N;
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const layouts: Layout[] = ['today', 'by-content', 'int-key'];
const runs = new Map<Layout, number[]>(layouts.map((l) => [l, []]));
// Alternated, twice: the machine's disk and other work move absolute figures between runs.
for (let round = 0; round < 2; round++) for (const l of layouts) runs.get(l)!.push(measure(l));
const base = Math.min(...runs.get('today')!);
console.log(`${N} new rollouts graded, ${GROUP} per transaction\n\nlayout        us/grade (best of 2)   vs today`);
for (const l of layouts) {
  const best = Math.min(...runs.get(l)!);
  console.log(`${l.padEnd(14)}${best.toFixed(0).padStart(10)}${(best / base).toFixed(2).padStart(20)}x   (runs: ${runs.get(l)!.map((x) => x.toFixed(0)).join(', ')})`);
}
