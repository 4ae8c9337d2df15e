// Second step of `npm run build` (after tsc): copies into dist/ the files the compiled units read
// at run time that tsc does not emit: everything in tools/ and graders/ that is not TypeScript
// (OpenAI grader JSON, unit_tests' Python runner) and the finqa documents the finqa tools read at
// ../../examples/finqa/docs from their own module; and the dashboard's static files (src/dashboard),
// which the compiled dashboard route reads beside its own folder.
import { cpSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
if (!existsSync(dist)) throw new Error('dist/ is missing: run tsc -p tsconfig.build.json first');

const copied = [];
const copy = (from) => {
  const to = join(dist, relative(root, from));
  cpSync(from, to, { recursive: true });
  copied.push(relative(root, from));
};

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (!/\.[mc]?ts$/.test(name) && name !== 'README.md') copy(path);
  }
}

walk(join(root, 'tools'));
walk(join(root, 'graders'));
walk(join(root, 'src/dashboard'));
copy(join(root, 'examples/finqa/docs'));
process.stdout.write(`build: copied ${copied.length} assets into dist/ (${copied.join(', ')})\n`);
