// Which Postgres failures are worth one more attempt on a fresh connection: the connection broke
// (the database restarted, a pooler or the network dropped it) or the server cancelled the
// statement. Integrity, data and syntax errors would only fail again.
const RETRY_CLASSES = new Set(['08', '40', '53', '57']);

export function isTransient(e: unknown): boolean {
  const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
  // Node's socket errors carry an errno name (ECONNRESET ...); pg's own connection errors nothing.
  if (typeof code === 'string' && code.startsWith('E')) return true;
  if (typeof code !== 'string') return /connection|terminated|timeout/i.test(String(message));
  return code.length === 5 && RETRY_CLASSES.has(code.slice(0, 2));
}

/** Runs fn, and once more if it failed transiently. Only for operations that are safe to repeat. */
export async function retryOnce<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (!isTransient(e)) throw e;
    return fn();
  }
}
