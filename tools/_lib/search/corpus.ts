// A directory of markdown documents as a searchable corpus. Built once per process and directory
// (lazily, on the first tool call), because every search and read in every rollout uses the same
// read-only documents.
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { errors } from 'rft-endpoints';
import { Bm25Index, type Bm25Options } from './bm25.js';

export interface CorpusDoc {
  /** The file name without `.md`. */
  id: string;
  /** The first heading line, without the `#`. */
  title: string;
  text: string;
}

export interface Corpus {
  dir: string;
  docs: CorpusDoc[];
  byId: Map<string, CorpusDoc>;
  index: Bm25Index;
}

export function titleOf(id: string, text: string): string {
  const line = text.split('\n').find((l) => l.trim().length > 0) ?? '';
  return line.replace(/^\s*#+\s*/, '').trim() || id;
}

export async function loadCorpus(dir: string, opts: Bm25Options = {}): Promise<Corpus> {
  let names: string[];
  try {
    // Sorted by id, not file name: "q1-2025" before "q1-2025-preliminary" ('.' sorts after '-').
    names = (await readdir(dir))
      .filter((n) => n.endsWith('.md') && !n.startsWith('.'))
      .sort((a, b) => (a.slice(0, -3) < b.slice(0, -3) ? -1 : 1));
  } catch (e) {
    throw errors.corpus(dir, `cannot read the directory (${(e as Error).message})`);
  }
  if (names.length === 0) throw errors.corpus(dir, 'contains no .md documents');
  const docs = await Promise.all(
    names.map(async (name) => {
      const id = name.slice(0, -'.md'.length);
      const text = await readFile(join(dir, name), 'utf8');
      return { id, title: titleOf(id, text), text };
    }),
  );
  // The title is indexed once more than it appears: it names the company and the period, which is
  // what most questions are about, and among near-identical reports it should decide the ranking.
  const indexed = docs.map((d) => ({ id: d.id, text: `# ${d.title}\n${d.text}` }));
  return { dir, docs, byId: new Map(docs.map((d) => [d.id, d])), index: new Bm25Index(indexed, opts) };
}

const cache = new Map<string, Promise<Corpus>>();

/** The corpus of `dir`, loaded on first use and shared afterwards; a failed load is retried next time. */
export function corpusFor(dir: string): Promise<Corpus> {
  const key = resolve(dir);
  let p = cache.get(key);
  if (!p) {
    p = loadCorpus(key);
    cache.set(key, p);
    p.catch(() => cache.delete(key));
  }
  return p;
}
