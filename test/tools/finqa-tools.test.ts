import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRftError } from '../../src/errors.js';
import listDocs from '../../tools/list_docs.js';
import readDoc, { PAGE_CHARS } from '../../tools/read_doc.js';
import searchDocs from '../../tools/search_docs.js';
import { FINQA_DOCS_DIR } from '../../tools/_lib/finqa-corpus.js';
import { corpusFor } from '../../tools/_lib/search/index.js';
import { toolContext } from '../helpers/finqa-context.js';
import { repoRoot } from '../helpers/server.js';

type SearchOut = { results: Array<{ doc_id: string; title: string; score: number; snippet: string }>; message?: string };
type ListOut = { count: number; docs: Array<{ doc_id: string; title: string }>; message?: string };
type ReadOut = { doc_id: string; title: string; page: number; pages: number; text: string };

const search = async (args: { query: string; top_k?: number }) => (await searchDocs.handler(args, toolContext())) as SearchOut;
const list = async (args: { prefix?: string }) => (await listDocs.handler(args, toolContext())) as ListOut;
const read = async (args: { doc_id: string; page?: number }) => (await readDoc.handler(args, toolContext())) as ReadOut;

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected the tool to throw');
    },
    (e: unknown) => e,
  );
}

describe('finqa tools on the shipped corpus', () => {
  it('search_docs finds the document naming a rare term first, with its title and the matching line', async () => {
    const out = await search({ query: 'Kestrel Line contract worth', top_k: 1 });
    expect(out.results).toHaveLength(1);
    expect(out.results[0]?.doc_id).toBe('halvorsen-earnings-call-q2-2025');
    expect(out.results[0]?.title).toBe('Halvorsen Maritime Systems — Q2 2025 Earnings Call (Excerpt)');
    expect(out.results[0]?.snippet).toContain('$14 million over three years');
  });

  it('search_docs returns 3 results by default and rounds scores to 2 decimals', async () => {
    const out = await search({ query: 'Corvane net sales' });
    expect(out.results).toHaveLength(3);
    for (const r of out.results) expect(Math.round(r.score * 100) / 100).toBe(r.score);
    expect(out.results.every((r) => r.doc_id.startsWith('corvane'))).toBe(true);
  });

  it('search_docs keeps its output short (under 2 KB for 5 results)', async () => {
    const out = await search({ query: 'revenue guidance 2025', top_k: 5 });
    expect(out.results).toHaveLength(5);
    expect(JSON.stringify(out).length).toBeLessThan(2048);
  });

  it('search_docs answers "no results" readably when nothing matches', async () => {
    const out = await search({ query: 'xyzzy plugh' });
    expect(out.results).toEqual([]);
    expect(out.message).toMatch(/No document matches "xyzzy plugh"/);
  });

  it('search_docs refuses top_k above 10 through its schema', () => {
    expect(searchDocs.parameters.safeParse({ query: 'x', top_k: 11 }).success).toBe(false);
    expect(searchDocs.parameters.safeParse({ query: 'x', top_k: 10 }).success).toBe(true);
    expect(searchDocs.parameters.safeParse({ query: '' }).success).toBe(false);
  });

  it('list_docs lists every document with its title, sorted by id', async () => {
    const out = await list({});
    expect(out.count).toBe(21);
    expect(out.docs.map((d) => d.doc_id)).toEqual([...out.docs.map((d) => d.doc_id)].sort());
    expect(out.docs.find((d) => d.doc_id === 'tessaline-q1-2025')?.title).toBe('Tessaline Robotics — First Quarter 2025 Results');
  });

  it('list_docs filters by a case-insensitive doc_id prefix', async () => {
    const out = await list({ prefix: 'Pellucid' });
    expect(out.docs.map((d) => d.doc_id)).toEqual([
      'pellucid-dry-creek-cod',
      'pellucid-guidance-revision',
      'pellucid-q2-2025',
      'pellucid-q3-2025',
    ]);
  });

  it('list_docs says so when no doc_id has the prefix', async () => {
    const out = await list({ prefix: 'acme' });
    expect(out.count).toBe(0);
    expect(out.message).toMatch(/No doc_id starts with "acme"/);
  });

  it('read_doc returns page 1 with the page count, cut at a line boundary', async () => {
    const out = await read({ doc_id: 'halvorsen-q2-2025' });
    expect(out.page).toBe(1);
    expect(out.pages).toBeGreaterThan(1);
    expect(out.text.startsWith('# Halvorsen Maritime Systems — Second Quarter 2025 Report')).toBe(true);
    expect(out.text.length).toBeLessThanOrEqual(PAGE_CHARS);
  });

  it('read_doc pages together give back the whole document', async () => {
    const first = await read({ doc_id: 'corvane-h1-2025-interim' });
    const pages = [first.text];
    for (let p = 2; p <= first.pages; p++) pages.push((await read({ doc_id: 'corvane-h1-2025-interim', page: p })).text);
    const whole = pages.join('\n');
    expect(whole).toContain('Final net sales are therefore $944.6 million');
    expect(whole).toContain('Medium-term targets will be set out at the capital markets day in November.');
  });

  it('read_doc forgives case, spaces and a .md suffix in the doc_id', async () => {
    const out = await read({ doc_id: ' Pellucid-Q3-2025.md ' });
    expect(out.doc_id).toBe('pellucid-q3-2025');
  });

  it('read_doc rejects an unknown doc_id with RFT_ERR_DOC_NOT_FOUND naming the closest ids', async () => {
    const e = await rejection(read({ doc_id: 'halvorsen-q2' }));
    expect(isRftError(e) && e.code).toBe('RFT_ERR_DOC_NOT_FOUND');
    expect((e as Error).message).toContain('"halvorsen-q2-2025"');
    expect((e as Error).message).toContain('list_docs');
  });

  it('read_doc rejects a page past the end with RFT_ERR_TOOL_INPUT and the page count', async () => {
    const e = await rejection(read({ doc_id: 'pellucid-q3-2025', page: 99 }));
    expect(isRftError(e) && e.code).toBe('RFT_ERR_TOOL_INPUT');
    expect((e as Error).message).toMatch(/has \d+ page\(s\)/);
  });
});

describe('the finqa corpus', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'finqa-docs-'));
    await writeFile(join(dir, 'alpha.md'), '# Alpha Corp Report\n\nAlpha revenue was $3 million.\n');
    await writeFile(join(dir, 'beta.md'), '# Beta Inc Note\n\nBeta hired 40 engineers.\n');
    await writeFile(join(dir, 'notes.txt'), 'not a document');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is examples/finqa/docs, found from the module itself (no environment variable)', () => {
    expect(FINQA_DOCS_DIR).toBe(join(repoRoot, 'examples/finqa/docs/'));
  });

  it('of a folder holds its .md files only, titled by their first heading', async () => {
    const corpus = await corpusFor(dir);
    expect(corpus.docs.map((d) => [d.id, d.title])).toEqual([
      ['alpha', 'Alpha Corp Report'],
      ['beta', 'Beta Inc Note'],
    ]);
  });

  it('of a missing folder fails with RFT_ERR_CORPUS', async () => {
    const e = await rejection(corpusFor(join(dir, 'missing')));
    expect(isRftError(e) && e.code).toBe('RFT_ERR_CORPUS');
  });
});
