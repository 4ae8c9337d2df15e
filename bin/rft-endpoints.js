#!/usr/bin/env node
// The `rft-endpoints` command. An installed package runs the compiled dist/. A checkout (src/ is
// there) runs the TypeScript source through tsx, with the `rft-source` export condition so that a
// unit's `import ... from 'rft-endpoints'` loads these same source modules (package.json "exports").
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { unsupportedNode } from './node-version.js';

const tooOld = unsupportedNode(process.version);
if (tooOld) process.stderr.write(`${tooOld}\n`);

const source = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(source)) {
  register('./source-condition.js', import.meta.url);
  const { register: registerTsx } = await import('tsx/esm/api');
  registerTsx();
  await import(source.href);
} else {
  await import('../dist/src/cli/main.js');
}
