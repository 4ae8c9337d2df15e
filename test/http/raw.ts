// Raw HTTP/1.1 over a socket, for what fetch will not send: malformed requests, partial bodies,
// oversized headers, stalls.
import { connect, type Socket } from 'node:net';

export interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses the first HTTP response in `data` (Content-Length bodies only), or undefined if incomplete. */
export function parseReply(data: string): RawReply | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine, ...lines] = data.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = data.slice(end + 4);
  if (Buffer.byteLength(body) < length) return undefined;
  return { status: Number(statusLine!.split(' ')[1]), headers, body };
}

export function open(url: string, localAddress = '127.0.0.1'): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ host: hostname, port: Number(port), localAddress }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Sends `text`; resolves with the first complete reply and a promise of the socket's close. */
export async function exchange(url: string, text: string | Buffer, timeoutMs = 10_000): Promise<RawReply & { closed: Promise<void>; socket: Socket }> {
  const s = await open(url);
  let data = '';
  const closed = new Promise<void>((r) => s.once('close', () => r()));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error(`no reply within ${timeoutMs} ms; got ${JSON.stringify(data.slice(0, 200))}`));
    }, timeoutMs);
    const check = () => {
      const r = parseReply(data);
      if (!r) return false;
      clearTimeout(t);
      resolve({ ...r, closed, socket: s });
      return true;
    };
    s.on('data', (d: Buffer) => {
      data += d.toString();
      check();
    });
    s.on('error', () => {});
    s.on('close', () => {
      if (!check()) {
        clearTimeout(t);
        reject(new Error(`closed without a reply; got ${JSON.stringify(data.slice(0, 200))}`));
      }
    });
    s.write(text);
  });
}

/** One request on a connection of its own: the reply's status and its error's code (undefined when the body is no coded error). */
export async function statusAndCode(url: string, text: string): Promise<{ status: number; code: string | undefined }> {
  const r = await exchange(url, text);
  r.socket.destroy();
  try {
    return { status: r.status, code: (JSON.parse(r.body) as { error?: { code?: string } }).error?.code };
  } catch {
    return { status: r.status, code: undefined };
  }
}
