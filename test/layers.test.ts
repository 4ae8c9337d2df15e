// The layers of src/ (docs/architecture.md): a file imports from its own layer or the ones below it,
// never from a layer above, and no files import each other in a cycle. Read from the source with
// TypeScript's own import scanner (static, `export ... from`, `import type` and dynamic imports), so a
// new upward import or cycle fails here, naming the import. A cycle of types is a cycle too: the
// files cannot be understood, moved or tested one without the other.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/server.js';

/** Bottom to top. A path ending in / is a folder; the longest matching path decides a file's layer. */
const LAYERS: readonly { name: string; paths: readonly string[] }[] = [
  { name: 'errors and loopback', paths: ['src/errors.ts', 'src/loopback.ts'] },
  { name: 'sandbox', paths: ['src/sandbox/', 'src/harbor/types.ts', 'src/harbor/sandbox-spec.ts'] },
  { name: 'protocol and config', paths: ['src/protocol/', 'src/config.ts'] },
  { name: 'record', paths: ['src/store/', 'src/stats/insights.ts'] },
  { name: 'observability', paths: ['src/metrics/', 'src/integrity/'] },
  { name: 'units', paths: ['src/registry/', 'src/grading/'] },
  { name: 'core', paths: ['src/rollout/', 'src/ledger/', 'src/grading-service/', 'src/mcp/', 'src/environments/', 'src/harbor/', 'src/protocol/record-json.ts'] },
  { name: 'http', paths: ['src/http/', 'src/authentication/'] },
  { name: 'doors and routes', paths: ['src/doors/', 'src/routes/', 'src/stats/', 'src/dashboard/'] },
  { name: 'application', paths: ['src/app.ts', 'src/server.ts', 'src/index.ts', 'src/cli/'] },
];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(repoRoot, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(`${dir}/${e.name}`) : /\.(ts|js)$/.test(e.name) ? [`${dir}/${e.name}`] : [],
  );
}

/** Each file's relative imports (static, `export ... from`, dynamic), as repo paths of the .ts files they name. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles('src')) {
    const source = ts.createSourceFile(file, readFileSync(join(repoRoot, file), 'utf8'), ts.ScriptTarget.Latest, false);
    const imports: string[] = [];
    const add = (spec: string) => {
      if (spec.startsWith('.')) imports.push(relative(repoRoot, resolve(repoRoot, dirname(file), spec)).replace(/\.js$/, '.ts'));
    };
    const visit = (node: ts.Node): void => {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        add(node.moduleSpecifier.text);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
        add(node.arguments[0].text);
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
        add(node.argument.literal.text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    graph.set(file, imports);
  }
  return graph;
}

function layerOf(file: string): number {
  let best = -1;
  let bestLength = 0;
  LAYERS.forEach((layer, i) => {
    for (const p of layer.paths) {
      const match = p.endsWith('/') ? file.startsWith(p) : file === p;
      if (match && p.length > bestLength) [best, bestLength] = [i, p.length];
    }
  });
  return best;
}

/** Strongly connected components of more than one file (Tarjan), each sorted. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the layers of src/ (docs/architecture.md)', () => {
  const graph = importGraph();

  it('puts every source file in a layer', () => {
    expect([...graph.keys()].filter((f) => layerOf(f) < 0)).toEqual([]);
  });

  it('has no import from a layer above the importing file', () => {
    const upward = [...graph].flatMap(([file, targets]) =>
      targets.filter((t) => graph.has(t) && layerOf(t) > layerOf(file)).map((t) => `${file} -> ${t}`),
    );
    const named = (edge: string) => {
      const [from, to] = edge.split(' -> ') as [string, string];
      return `${edge} (${LAYERS[layerOf(from)]!.name} imports ${LAYERS[layerOf(to)]!.name})`;
    };
    expect(upward.map(named)).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(cycles(graph).map((c) => c.join(' '))).toEqual([]);
  });

  it('catches an upward import and a cycle (the check itself)', () => {
    const fake = new Map([
      ['src/store/a.ts', ['src/ledger/b.ts']],
      ['src/ledger/b.ts', ['src/store/a.ts']],
    ]);
    expect(layerOf('src/store/a.ts')).toBeLessThan(layerOf('src/ledger/b.ts'));
    expect(cycles(fake)).toEqual([['src/ledger/b.ts', 'src/store/a.ts']]);
  });
});
