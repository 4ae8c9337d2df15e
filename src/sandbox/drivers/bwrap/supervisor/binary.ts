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
export const SUPERVISOR_SOURCES = ['supervisor.c', 'enter.c', 'enter.h', 'commands.h', 'frames.h', 'limits.h'];
export const SUPERVISOR_NAME = 'rft-supervisor';

/** A small C program built from sources beside each other: the supervisor, or the Docker driver's agent. */
export interface Program {
  dir: string;
  /** Paths relative to `dir`: the .c files are compiled, every one is hashed. */
  sources: string[];
  name: string;
  /** Compilers to try in turn (the first that builds wins); each as argv before the flags. */
  compilers: string[][];
}

const SUPERVISOR: Program = { dir: SUPERVISOR_DIR, sources: SUPERVISOR_SOURCES, name: SUPERVISOR_NAME, compilers: [['cc', '-static'], ['cc']] };

/** The hash of the sources (first 16 hex digits): names the executable built from them. */
export function sourceHash(dir = SUPERVISOR_DIR, sources = SUPERVISOR_SOURCES): string {
  const h = createHash('sha256');
  for (const f of sources) h.update(readFileSync(join(dir, f)));
  return h.digest('hex').slice(0, 16);
}

/** Compiles the sources into `out` (written under a temporary name, then renamed). */
export async function compileSupervisor(out: string, dir = SUPERVISOR_DIR): Promise<void> {
  await compileProgram({ ...SUPERVISOR, dir }, out);
}

export async function compileProgram(p: Program, out: string): Promise<void> {
  const sources = p.sources.filter((f) => f.endsWith('.c')).map((f) => join(p.dir, f));
  const tmp = `${out}.${randomBytes(6).toString('hex')}.tmp`;
  const flags = ['-O2', '-std=gnu11', '-Wall', '-o', tmp, ...sources];
  try {
    let failed: unknown = new Error('no compiler to try');
    for (const [cc, ...pre] of p.compilers) {
      try {
        await run(cc as string, [...pre, ...flags], { timeout: 120_000 });
        failed = null;
        break;
      } catch (e) {
        failed = e;
      }
    }
    if (failed) throw failed;
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

const found = new Map<string, Promise<string>>();

/** The program's executable for these sources: the one `npm run build` made beside them, or one compiled on first use. */
export function programBinary(p: Program): Promise<string> {
  let f = found.get(p.name);
  if (!f) {
    f = (async () => {
      const hash = sourceHash(p.dir, p.sources);
      const built = join(p.dir, p.name);
      if (existsSync(built) && (await readFile(`${built}.sha256`, 'utf8').catch(() => '')).trim() === hash) return built;
      const cached = join(await privateCache(), `${p.name}-${hash}`);
      if (!existsSync(cached)) await compileProgram(p, cached);
      return cached;
    })().catch((e: unknown) => {
      found.delete(p.name);
      throw e;
    });
    found.set(p.name, f);
  }
  return f;
}

/** The supervisor's executable for these sources; compiles it on first use when none was built. */
export function supervisorBinary(): Promise<string> {
  return programBinary(SUPERVISOR);
}
