// Where the supervisor's executable comes from: built by `npm run build` beside its sources
// (dist/src/sandbox/drivers/bwrap/supervisor/rft-supervisor, with the hash of the sources it was built from), or
// else compiled once with the machine's C compiler into a private cache (~/.cache/rft-endpoints),
// named by that hash, so an edited source is never run stale. Static when the C library allows it.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, lstat, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const SUPERVISOR_DIR = import.meta.dirname;
export const SUPERVISOR_SOURCES = ['supervisor.c', 'enter.c', 'enter.h'];
export const SUPERVISOR_NAME = 'rft-supervisor';

/** The hash of the sources (first 16 hex digits): names the executable built from them. */
export function sourceHash(dir = SUPERVISOR_DIR): string {
  const h = createHash('sha256');
  for (const f of SUPERVISOR_SOURCES) h.update(readFileSync(join(dir, f)));
  return h.digest('hex').slice(0, 16);
}

/** Compiles the sources into `out` (written under a temporary name, then renamed). */
export async function compileSupervisor(out: string, dir = SUPERVISOR_DIR): Promise<void> {
  const sources = SUPERVISOR_SOURCES.filter((f) => f.endsWith('.c')).map((f) => join(dir, f));
  const tmp = `${out}.${randomBytes(6).toString('hex')}.tmp`;
  const flags = ['-O2', '-std=gnu11', '-Wall', '-o', tmp, ...sources];
  try {
    await run('cc', ['-static', ...flags], { timeout: 120_000 }).catch(() => run('cc', flags, { timeout: 120_000 }));
    await chmod(tmp, 0o755);
    await rename(tmp, out);
  } finally {
    await rm(tmp, { force: true });
  }
}

/** A directory only we can write to (the executable in it runs as the server's user, root included). */
async function privateCache(): Promise<string> {
  const dir = join(homedir(), '.cache', 'rft-endpoints');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await lstat(dir);
  const uid = process.getuid?.() ?? st.uid;
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o022) !== 0) {
    throw new Error(`${dir} must be a directory of this user that no one else can write to`);
  }
  return dir;
}

let found: Promise<string> | null = null;

/** The supervisor's executable for these sources; compiles it on first use when none was built. */
export function supervisorBinary(): Promise<string> {
  found ??= (async () => {
    const hash = sourceHash();
    const built = join(SUPERVISOR_DIR, SUPERVISOR_NAME);
    if (existsSync(built) && (await readFile(`${built}.sha256`, 'utf8').catch(() => '')).trim() === hash) return built;
    const cached = join(await privateCache(), `${SUPERVISOR_NAME}-${hash}`);
    if (!existsSync(cached)) await compileSupervisor(cached);
    return cached;
  })().catch((e: unknown) => {
    found = null;
    throw e;
  });
  return found;
}
