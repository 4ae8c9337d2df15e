// Test helper: the coded error a call throws (sync or async), for assertions on codes and details.
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
