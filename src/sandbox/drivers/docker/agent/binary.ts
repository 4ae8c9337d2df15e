// The agent's executable (agent.c), as the bwrap supervisor's is found or built (../../bwrap/supervisor/binary.ts):
// by `npm run build` beside its sources, else compiled once into ~/.cache/rft-endpoints named by the
// sources' hash. Static, since it runs in whatever image the container has: musl when this machine
// has musl-gcc (75 KB: what each container start copies in), else glibc's static library (800 KB).
import { readFile } from 'node:fs/promises';
import { programBinary, type Program } from '../../bwrap/supervisor/binary.js';

export const AGENT: Program = {
  dir: import.meta.dirname,
  sources: ['agent.c', '../../bwrap/supervisor/commands.h', '../../bwrap/supervisor/frames.h', '../../bwrap/supervisor/limits.h'],
  name: 'rft-agent',
  compilers: [
    ['musl-gcc', '-static', '-Os', '-s'],
    ['cc', '-static', '-s'],
  ],
};

let bytes: Promise<Buffer> | null = null;

/** The agent's executable, read once (every container start sends it). */
export function agentBinary(): Promise<Buffer> {
  bytes ??= programBinary(AGENT)
    .then((path) => readFile(path))
    .catch((e: unknown) => {
      bytes = null;
      throw e;
    });
  return bytes;
}
