// Copies the task's pristine files (`<hidden>/files/**`) over the agent's final workspace on the
// host, replacing whatever the agent left at those paths. The workspace came out of the sandbox, so
// any component may be a symlink the agent planted: each one is checked with lstat and replaced,
// never followed, so the copy cannot write outside the grading directory.
import { lstat, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

async function ensureDir(path: string): Promise<void> {
  const st = await lstat(path).catch(() => null);
  if (st?.isDirectory()) return;
  if (st) await rm(path, { recursive: true, force: true }); // a file or symlink where a dir belongs
  await mkdir(path);
}

/** Copies `srcDir` into `destRoot` (which the caller created); returns the relative paths written. */
export async function overlayFiles(srcDir: string, destRoot: string, rel = ''): Promise<string[]> {
  const written: string[] = [];
  const entries = await readdir(join(srcDir, rel), { withFileTypes: true }).catch(() => null);
  if (!entries) return written;
  for (const e of entries) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      await ensureDir(join(destRoot, r));
      written.push(...(await overlayFiles(srcDir, destRoot, r)));
    } else if (e.isFile()) {
      const dest = join(destRoot, r);
      await rm(dest, { recursive: true, force: true }); // rm on a symlink removes the link itself
      await writeFile(dest, await readFile(join(srcDir, r)), { flag: 'wx', mode: 0o644 });
      written.push(r);
    }
  }
  return written;
}
