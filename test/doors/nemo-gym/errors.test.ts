// The NeMo Gym door's own listener answers Fastify's errors as every listener does (src/http/error-replies.ts
// toRftError): the same status and RFT_ERR_* code for the same fault, whichever listener the trainer reached,
// and never Fastify's own shape.
import { describe, expect, it } from 'vitest';
import net from 'node:net';
import { withNemoGymDoor } from '../../helpers/nemo-gym-client.js';

/** One request's bytes on a connection of its own: the status line and the body. */
function raw(url: string, text: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(port), hostname);
    let d = '';
    s.on('data', (b: Buffer) => (d += b.toString()));
    s.on('error', reject);
    s.on('close', () => resolve({ status: Number(d.split(' ')[1]), body: d.slice(d.indexOf('\r\n\r\n') + 4) }));
    s.write(text);
  });
}
const post = (path: string, contentType: string) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${contentType}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`;
const codeOf = (body: string) => (JSON.parse(body) as { error?: { code?: string } }).error?.code;

describe("NeMo Gym door: Fastify's errors in the shared shape", () => {
  const s = withNemoGymDoor();

  it('a Content-Type that is no media type is 415 RFT_ERR_UNSUPPORTED_MEDIA_TYPE, as on the main listener', async () => {
    for (const ct of [';;;', '']) {
      const r = await raw(s.door, post('/seed_session', ct));
      expect({ status: r.status, code: codeOf(r.body) }, JSON.stringify(ct)).toEqual({ status: 415, code: 'RFT_ERR_UNSUPPORTED_MEDIA_TYPE' });
      const main = await raw(s.server.url, post('/tools', ct).replace('\r\n\r\n', `\r\nAuthorization: Bearer ${s.server.key}\r\n\r\n`));
      expect(main.status).toBe(415);
    }
  });

  it('a route the door does not have is 404 RFT_ERR_NOT_FOUND in our shape', async () => {
    for (const text of [post(`/mcp/${'y'.repeat(200)}`, 'application/json'), post(`/ng-rollout/${'x'.repeat(300)}/seed_session`, 'application/json'), 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n']) {
      const r = await raw(s.door, text);
      expect({ status: r.status, code: codeOf(r.body) }, text.slice(0, 40)).toEqual({ status: 404, code: 'RFT_ERR_NOT_FOUND' });
    }
  });

  it('a tool name longer than a path segment may be is 414 RFT_ERR_URI_TOO_LONG (the router\'s, through the same mapping)', async () => {
    for (const path of [`/${'t'.repeat(101)}`, `/ng-rollout/0-0/${'t'.repeat(101)}`]) {
      const r = await raw(s.door, post(path, 'application/json'));
      expect({ status: r.status, code: codeOf(r.body) }).toEqual({ status: 414, code: 'RFT_ERR_URI_TOO_LONG' });
    }
  });
});
