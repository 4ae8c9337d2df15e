// Second step of `npm run build` (after tsc): copies into dist/ the files the compiled units read
// at run time that tsc does not emit: everything in tools/ and graders/ that is not TypeScript
// (OpenAI grader JSON, unit_tests' Python runner) and the finqa documents the finqa tools read at
// ../../examples/finqa/docs from their own module; and the dashboard's static files (src/dashboard),
// which the compiled dashboard route reads beside its own folder. Then the bwrap driver's supervisor:
// its C sources, and the executable built from them with the hash of what it was built from
// (src/sandbox/drivers/bwrap/supervisor/binary.ts), when this machine has a C compiler (else the server compiles
// it on first use).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
    else if (!/\.[mc]?ts$/.test(name) && name !== 'README.md' && name !== 'tsconfig.json') copy(path);
  }
}

walk(join(root, 'tools'));
walk(join(root, 'graders'));
walk(join(root, 'src/dashboard'));
copy(join(root, 'examples/finqa/docs'));
copy(join(root, 'src/grading/python-grader.py')); // OpenAI python graders' runner (python.ts)
copy(join(root, 'src/doors/sandbox-fusion/launcher.py')); // the SandboxFusion door's launcher (run.ts)

// Each program: its sources copied, then compiled beside them with its hash (as Program in binary.ts).
function buildProgram(dir, sources, name, compilers) {
  for (const f of sources) copy(join(root, dir, f));
  const out = join(dist, dir);
  const hash = createHash('sha256');
  for (const f of sources) hash.update(readFileSync(join(out, f)));
  const c = sources.filter((f) => f.endsWith('.c')).map((f) => join(out, f));
  const flags = ['-O2', '-std=gnu11', '-Wall', '-o', join(out, `${name}.tmp`), ...c];
  let built = false;
  for (const [cc, ...pre] of compilers) {
    try {
      execFileSync(cc, [...pre, ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
      built = true;
      break;
    } catch {
      // no such compiler, or no static C library: the next one, then give up
    }
  }
  if (built) {
    renameSync(join(out, `${name}.tmp`), join(out, name));
    writeFileSync(join(out, `${name}.sha256`), `${hash.digest('hex').slice(0, 16)}\n`);
    copied.push(`${name} (compiled)`);
  } else {
    rmSync(join(out, `${name}.tmp`), { force: true });
    process.stderr.write(`build: could not compile ${name}: the server compiles it on first use instead\n`);
  }
}
// as SUPERVISOR in bwrap/supervisor/binary.ts and AGENT in docker/agent/binary.ts
buildProgram('src/sandbox/drivers/bwrap/supervisor', ['supervisor.c', 'enter.c', 'enter.h', 'commands.h', 'frames.h', 'limits.h'], 'rft-supervisor', [['cc', '-static'], ['cc']]);
buildProgram('src/sandbox/drivers/docker/agent', ['agent.c', '../../bwrap/supervisor/commands.h', '../../bwrap/supervisor/frames.h', '../../bwrap/supervisor/limits.h'], 'rft-agent', [['musl-gcc', '-static', '-Os', '-s'], ['cc', '-static', '-s']]);
process.stdout.write(`build: copied ${copied.length} assets into dist/ (${copied.join(', ')})\n`);
