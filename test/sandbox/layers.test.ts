// The sandbox is a lower layer (issue 23): the ledger, store, doors, grading and MCP bridge import its
// ports (provider.ts, placements.ts, types.ts), never the reverse, and its modules form no import
// cycle. Read from the source: a new upward import or cycle fails here, naming the file.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SRC = resolve(import.meta.dirname, '..', '..', 'src');
const SANDBOX = join(SRC, 'sandbox');
/** Leaves every layer may import (as errors.ts). */
const LEAVES = new Set([join(SRC, 'errors.ts'), join(SRC, 'loopback.ts')]);
/**
 * Files outside the folder that are of the sandbox's layer (docs/architecture.md, test/layers.test.ts): a Harbor
 * task's types and its sandbox spec, which import nothing but the sandbox's types and each other (checked below).
 */
const OF_THE_LAYER = [join(SRC, 'harbor', 'types.ts'), join(SRC, 'harbor', 'sandbox-spec.ts')];
for (const f of OF_THE_LAYER) LEAVES.add(f);

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

/** The files a module imports (static and dynamic, types included), by relative specifier. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*)'(\.[^']+)'/g)].map((m) => m[1] as string);
  return specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

const files = tsFiles(SANDBOX);
const graph = new Map(files.map((f) => [f, importsOf(f)]));

describe('src/sandbox layering', () => {
  it('imports nothing of the server outside src/sandbox but the leaves', () => {
    const upward = files.flatMap((f) => (graph.get(f) ?? []).filter((t) => !t.startsWith(SANDBOX + '/') && !LEAVES.has(t)).map((t) => `${relative(SRC, f)} -> ${relative(SRC, t)}`));
    expect(upward).toEqual([]);
    const fromTheLayer = OF_THE_LAYER.flatMap((f) => importsOf(f).filter((t) => !t.startsWith(SANDBOX + '/') && !LEAVES.has(t)).map((t) => `${relative(SRC, f)} -> ${relative(SRC, t)}`));
    expect(fromTheLayer).toEqual([]);
  });

  it('has no import cycle', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (f: string, path: string[]): void => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        cycles.push([...path.slice(path.indexOf(f)), f].map((p) => relative(SANDBOX, p)).join(' -> '));
        return;
      }
      state.set(f, 'open');
      for (const t of graph.get(f) ?? []) if (graph.has(t)) visit(t, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of files) visit(f, []);
    expect(cycles).toEqual([]);
  });
});
