// A grader's version must change whenever its scoring changes (regrades and reports compare
// versions). The loader hashes only the grader's own file, so a grader whose logic lives in
// graders/_lib/ hashes those files too.
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sha256 } from 'rft-endpoints/grading';

/** sha256 (12 hex digits) of the given modules, named without extension relative to `base` (an import.meta.url). */
export function sourceVersion(base: string, modules: readonly string[]): string {
  const ext = extname(fileURLToPath(base));
  return sha256(modules.map((m) => readFileSync(new URL(`${m}${ext}`, base), 'utf8')).join('\0')).slice(0, 12);
}
