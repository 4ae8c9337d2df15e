// Names this server's sandboxes (and other per-process leftovers) across restarts: a random id kept
// in the data dir (`instance-id`), made on its first boot. A restarted server reads it back and finds,
// and reaps, what its crashed predecessor left; two servers with data dirs of their own never share
// it, whatever their paths (every container of the image has its data dir at /data: an id derived
// from the path made them reap each other's live sandboxes). A copy of a data dir copies its id:
// delete `instance-id` in the copy (docs/deploy.md, "Owner ids: several servers on one engine").
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errors } from '../errors.js';

export const INSTANCE_ID_FILE = 'instance-id';
const FORMAT = /^rft-[0-9a-f]{12}$/;

function read(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  if (!FORMAT.test(text)) throw errors.config(`${file} does not hold an instance id (rft- and 12 hex digits): delete it and a new one is made`, { file });
  return text;
}

export function instanceIdFor(dataDir: string): string {
  const file = join(dataDir, INSTANCE_ID_FILE);
  let id = read(file);
  if (!id) {
    mkdirSync(dataDir, { recursive: true });
    // Written aside, then linked into place: a reader never sees a half-written file, and of two
    // processes booting on one new data dir the second link fails and that one reads the first's id.
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(tmp, `rft-${randomBytes(6).toString('hex')}\n`, { mode: 0o644 });
    try {
      linkSync(tmp, file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      unlinkSync(tmp);
    }
    id = read(file)!;
  }
  return id;
}
