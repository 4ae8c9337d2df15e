import { describe, expect, it } from 'vitest';
import { Bm25Index, closestIds, editDistance, idf, paginate, stem, tokenize } from '../../../tools/_lib/search/index.js';

describe('tokenize', () => {
  it('lowercases, drops stopwords and keeps numbers whole with their decimals', () => {
    expect(tokenize('The Revenue of $48.6 million was up 12%')).toEqual(['revenue', '48.6', 'million', 'up', '12']);
  });

  it('drops thousands commas so "1,140" and "1140" are the same term', () => {
    expect(tokenize('1,140 employees')).toEqual(tokenize('1140 employee'));
  });

  it('keeps letters and digits of a label together ("Q2", "FY2025")', () => {
    expect(tokenize('Q2 FY2025 results')).toEqual(['q2', 'fy2025', 'result']);
  });

  it('splits sentence punctuation from a number ("2025." is 2025)', () => {
    expect(tokenize('in June 2025. Next')).toEqual(['june', '2025', 'next']);
  });

  it('stems only plurals', () => {
    expect([stem('margins'), stem('companies'), stem('operating'), stem('business'), stem('status')]).toEqual([
      'margin',
      'company',
      'operating',
      'business',
      'status',
    ]);
  });

  it('can index without stemming', () => {
    expect(tokenize('margins', { stem: false })).toEqual(['margins']);
  });
});

describe('Bm25Index', () => {
  // A corpus small enough to score by hand: N = 3, average length 7/3.
  const tiny = new Bm25Index([
    { id: 'd1', text: 'revenue grew revenue' },
    { id: 'd2', text: 'margin fell' },
    { id: 'd3', text: 'revenue margin' },
  ]);

  it('uses the non-negative Lucene IDF', () => {
    // ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6)
    expect(idf(3, 2)).toBeCloseTo(Math.log(1.6), 12);
    expect(idf(3, 3)).toBeGreaterThan(0);
  });

  it('matches a hand-computed BM25 score (k1 = 1.2, b = 0.75)', () => {
    // d1: tf 2, |d| 3: ln(1.6) * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / (7/3))) = 0.598186...
    expect(tiny.score('revenue', 'd1')).toBeCloseTo(0.5981864, 6);
    // d3: tf 1, |d| 2: ln(1.6) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / (7/3))) = 0.499176...
    expect(tiny.score('revenue', 'd3')).toBeCloseTo(0.4991763, 6);
    expect(tiny.score('revenue', 'd2')).toBe(0);
  });

  it('sums the terms of a query and ignores repeated query words', () => {
    expect(tiny.score('revenue margin', 'd3')).toBeCloseTo(2 * 0.4991763, 6);
    expect(tiny.score('revenue revenue', 'd1')).toBeCloseTo(tiny.score('revenue', 'd1'), 12);
  });

  it('ranks by score, best first, and leaves out documents without a query term', () => {
    expect(tiny.search('revenue', 10).map((h) => h.id)).toEqual(['d1', 'd3']);
  });

  it('breaks ties by id so the ranking is deterministic', () => {
    const idx = new Bm25Index([
      { id: 'b', text: 'same words' },
      { id: 'a', text: 'same words' },
    ]);
    expect(idx.search('words', 2).map((h) => h.id)).toEqual(['a', 'b']);
  });

  it('returns at most k hits, and none for a query of stopwords or unknown words', () => {
    expect(tiny.search('revenue margin', 1)).toHaveLength(1);
    expect(tiny.search('the of and', 3)).toEqual([]);
    expect(tiny.search('xyzzy', 3)).toEqual([]);
  });

  it('prefers the shorter of two documents with the same term frequency (length normalisation)', () => {
    const idx = new Bm25Index([
      { id: 'long', text: 'kestrel contract ferry ferry ferry ferry ferry ferry' },
      { id: 'short', text: 'kestrel contract' },
      { id: 'other', text: 'unrelated words here' },
    ]);
    expect(idx.search('kestrel', 2).map((h) => h.id)).toEqual(['short', 'long']);
  });

  it('ignores length with b = 0', () => {
    const idx = new Bm25Index(
      [
        { id: 'long', text: 'kestrel a b c d e f g' },
        { id: 'short', text: 'kestrel' },
        { id: 'other', text: 'x' },
      ],
      { b: 0 },
    );
    expect(idx.score('kestrel', 'long')).toBeCloseTo(idx.score('kestrel', 'short'), 12);
  });

  it('shows the best-matching line as the snippet, with a table row under its header', () => {
    const idx = new Bm25Index([
      {
        id: 'r',
        text: [
          '# Report',
          'Revenue grew strongly this year.',
          '| Segment | Q2 2025 | Q2 2024 |',
          '|---|---|---|',
          '| Fleet Services | $20.8 million | $17.9 million |',
        ].join('\n'),
      },
      { id: 'x', text: 'other text' },
    ]);
    expect(idx.search('fleet services', 1)[0]?.snippet).toBe('Segment | Q2 2025 | Q2 2024 — Fleet Services | $20.8 million | $17.9 million');
  });

  it('chooses the snippet by the query words the title does not already match', () => {
    const idx = new Bm25Index([
      { id: 'a', text: '# Acme Annual Report 2024\nAcme had a good 2024, said Acme.\nNet sales were $5 million.' },
      { id: 'x', text: 'other' },
    ]);
    expect(idx.search('Acme net sales 2024', 1)[0]?.snippet).toBe('Net sales were $5 million.');
  });

  it('prefers the earlier of two equally matching lines, and a line with a figure', () => {
    const idx = new Bm25Index([
      { id: 'a', text: 'Revenue grew in the year.\nRevenue was $9 million.\nRevenue was $8 million.' },
      { id: 'x', text: 'other' },
    ]);
    expect(idx.search('revenue', 1)[0]?.snippet).toBe('Revenue was $9 million.');
  });

  it('shortens a long passage around the first query term', () => {
    const filler = 'lorem ipsum dolor sit amet '.repeat(30);
    const idx = new Bm25Index([
      { id: 'l', text: `${filler}the Kestrel contract is worth $14 million ${filler}` },
      { id: 'x', text: 'other' },
    ]);
    const snippet = idx.search('kestrel', 1)[0]?.snippet ?? '';
    expect(snippet.length).toBeLessThanOrEqual(242);
    expect(snippet).toContain('Kestrel contract is worth $14 million');
    expect(snippet.startsWith('…') && snippet.endsWith('…')).toBe(true);
  });
});

describe('paginate', () => {
  it('cuts at line boundaries and keeps every line', () => {
    const text = Array.from({ length: 10 }, (_, i) => `line ${i} ${'x'.repeat(20)}`).join('\n');
    const pages = paginate(text, 70);
    expect(pages.every((p) => p.length <= 70)).toBe(true);
    expect(pages.join('\n')).toBe(text);
    expect(pages.every((p) => !p.startsWith('\n') && !p.endsWith('\n'))).toBe(true);
  });

  it('splits a line longer than a page at spaces', () => {
    const pages = paginate('word '.repeat(40).trim(), 50);
    expect(pages.every((p) => p.length <= 50 && p.length > 0)).toBe(true);
    expect(pages.join(' ')).toBe('word '.repeat(40).trim());
  });

  it('gives one page for a short text', () => {
    expect(paginate('short', 1500)).toEqual(['short']);
  });
});

describe('closestIds', () => {
  const ids = ['halvorsen-q1-2025', 'halvorsen-q2-2025', 'halvorsen-q2-2025-preliminary', 'corvane-fy2024-annual'];

  it('ranks ids sharing more words first, then by edit distance', () => {
    expect(closestIds('halvorsen-q2', ids)).toEqual(['halvorsen-q2-2025', 'halvorsen-q2-2025-preliminary', 'halvorsen-q1-2025']);
  });

  it('finds a typo by edit distance', () => {
    expect(closestIds('corvan-fy2024-anual', ids, 1)).toEqual(['corvane-fy2024-annual']);
  });

  it('suggests nothing for an unrelated id', () => {
    expect(closestIds('zzzz', ids)).toEqual([]);
  });

  it('computes Levenshtein distance', () => {
    expect([editDistance('kitten', 'sitting'), editDistance('', 'abc'), editDistance('same', 'same')]).toEqual([3, 3, 0]);
  });
});
