// Reading the files a command is given (datasets, results, exports): a missing or unreadable file
// is a coded RFT_ERR_FILE naming it, never a stack trace.
import { readFileSync } from 'node:fs';
import { errors } from '../errors.js';

export function readInputFile(path: string, what = 'file'): string {
  return readInputBytes(path, what).toString('utf8');
}

/** The file's bytes, for a reader that must see what UTF-8 decoding would hide. */
export function readInputBytes(path: string, what = 'file'): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? `no such ${what}` : code === 'EISDIR' ? `is a directory, not a ${what}` : code === 'EACCES' ? `${what} not readable (permission denied)` : (e as Error).message;
    throw errors.file(path, why);
  }
}

/** Calls `each` with the JSON value of every non-blank line, in order, and its 1-based number; a line that is not JSON is RFT_ERR_DATASET naming it. */
export function forEachJsonLine(file: string, text: string, each: (value: unknown, line: number) => void): void {
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      throw errors.dataset(file, i + 1, `not JSON: ${(e as Error).message}`);
    }
    each(value, i + 1);
  });
}
