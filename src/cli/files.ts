// Reading the files a command is given (datasets, results, exports): a missing or unreadable file
// is a coded RFT_ERR_FILE naming it, never a stack trace.
import { readFileSync } from 'node:fs';
import { errors } from '../errors.js';

export function readInputFile(path: string, what = 'file'): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? `no such ${what}` : code === 'EISDIR' ? `is a directory, not a ${what}` : code === 'EACCES' ? `${what} not readable (permission denied)` : (e as Error).message;
    throw errors.file(path, why);
  }
}
