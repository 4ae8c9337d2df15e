// Test helpers: the coded error a call throws (sync or async), for assertions on codes and details.
import { isRftError, type RftError } from '../../src/errors.js';

export function thrown(fn: () => unknown): RftError {
  try {
    fn();
  } catch (e) {
    if (isRftError(e)) return e;
    throw new Error(`expected an RftError, got ${String(e)}`);
  }
  throw new Error('expected a throw, none happened');
}

export async function rejected(p: Promise<unknown>): Promise<RftError> {
  try {
    await p;
  } catch (e) {
    if (isRftError(e)) return e;
    throw new Error(`expected an RftError, got ${String(e)}`);
  }
  throw new Error('expected a rejection, none happened');
}

/** The `code` of what `f` throws (an RftError's RFT_ERR_*, a Node errno name...), undefined when it throws nothing. */
export function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return (e as { code?: string } | null)?.code;
  }
  return undefined;
}
