// docs/units.md is the reference of what units declare and receive: every type src/index.ts exports has a
// section there ("### `Name`") naming each of its fields (each literal, for a union of strings), so a field
// added to RecordedCall or GraderContext without a line in the page fails here. Read with the TypeScript
// compiler API from the exported types themselves, not from a list kept by hand.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/server.js';

/** Each exported type of the package's entry point, with the names its page section must hold. */
function exportedTypes(): Map<string, string[]> {
  const config = ts.readConfigFile(join(repoRoot, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, repoRoot);
  const entry = join(repoRoot, 'src/index.ts');
  const program = ts.createProgram({ rootNames: [entry], options: { ...options, noEmit: true } });
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  const types = new Map<string, string[]>();
  for (const exported of checker.getExportsOfModule(module)) {
    const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    if (!(target.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) || target.flags & ts.SymbolFlags.Value) continue;
    const type = checker.getDeclaredTypeOfSymbol(target);
    const literals = type.isUnion() && type.types.every((t) => t.isStringLiteral()) ? type.types.map((t) => (t as ts.StringLiteralType).value) : undefined;
    types.set(exported.name, literals ?? checker.getPropertiesOfType(type).map((p) => p.name));
  }
  return types;
}

const page = readFileSync(join(repoRoot, 'docs/units.md'), 'utf8');

/** The text of the page's "### `name`" section, up to the next heading. */
function section(name: string): string | undefined {
  const start = page.indexOf(`\n### \`${name}\`\n`);
  if (start < 0) return undefined;
  const rest = page.slice(start + 1);
  const end = rest.slice(1).search(/\n#{2,3} /);
  return end < 0 ? rest : rest.slice(0, end + 1);
}

describe('docs/units.md', () => {
  const types = exportedTypes();

  it('covers the context types (the list is read from src/index.ts, so it cannot shrink unnoticed)', () => {
    for (const name of ['ToolContext', 'GraderContext', 'RolloutView', 'RecordedCall', 'BudgetUsage', 'Sandbox', 'GraderDefinition', 'CallStatus']) expect([...types.keys()]).toContain(name);
    expect(types.get('RecordedCall')).toEqual(expect.arrayContaining(['tool', 'credential', 'sandbox', 'status']));
    expect(types.get('CallStatus')).toContain('budget_exceeded');
  });

  it('has a section per exported type naming every one of its fields', () => {
    const missing: string[] = [];
    for (const [name, fields] of types) {
      const text = section(name);
      if (text === undefined) {
        missing.push(`### \`${name}\``);
        continue;
      }
      for (const f of fields) if (!new RegExp(`\`${f.replace(/[$]/g, '\\$&')}[\`(]`).test(text)) missing.push(`${name}.${f}`);
    }
    expect(missing).toEqual([]);
  });

  it('is linked from the README, beside writing a tool and a grader', () => {
    expect(readFileSync(join(repoRoot, 'README.md'), 'utf8')).toContain('(docs/units.md)');
  });
});
