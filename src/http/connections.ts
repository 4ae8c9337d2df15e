// Open connections, bounded below the process's open-file limit, on every listener (./listener.ts).
// The process's budget is split between its listeners (splitConnections) so a flood on a listener
// without credentials cannot take the descriptors the trainer's authenticated calls need. At a
// listener's cap a connection that has sent nothing useful is closed to make room, in this order:
// one whose request's headers have not ended a second after it connected (half-open, or silent), then
// one whose request's body is still arriving, then one idle between requests, then one that connected
// less than a second ago and has not sent its headers yet; the oldest first in each (a trainer's new
// connection sends its request at once, so it is the youngest of the last kind). A connection whose
// request is running (its handler has it), an upgraded one (a WebSocket) and, on the main listener,
// one that presented a valid credential are never closed for room: a new one is refused only when
// every open connection is one of these.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { errors } from '../errors.js';

/** The soft open-file limit (Linux), or undefined where it cannot be read. */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.split(/\s{2,}/)[1];
    return soft && /^\d+$/.test(soft) ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}

/** Half the open-file limit: the store, sandboxes' pipes and files keep the other half. */
export function defaultMaxConnections(): number {
  return Math.max(64, Math.floor((openFileLimit() ?? 8192) / 2));
}

/**
 * The process's connection budget split between its listeners. A credential-less listener gets its
 * configured cap, or a quarter of the budget; the main listener the rest, which must stay at least
 * half the budget (else a coded error at boot).
 */
export function splitConnections(total: number, doors: Record<string, number | undefined>): { main: number } & Record<string, number> {
  const shares: Record<string, number> = {};
  for (const [name, cap] of Object.entries(doors)) if (cap !== undefined) shares[name] = cap || Math.max(1, Math.floor(total / 4));
  const main = total - Object.values(shares).reduce((a, b) => a + b, 0);
  if (main < Math.ceil(total / 2)) throw errors.connectionShares(total, shares);
  return { ...shares, main };
}

/** How long a new connection may take to send its request's headers before it counts as having sent nothing. */
const FRESH_GRACE_MS = 1_000;

interface Conn {
  openedAt: number;
  /** The request being received or run, while there is one. */
  request: IncomingMessage | undefined;
  inFlight: number;
  /** Never closed for room: an authenticated connection, or an upgraded one. */
  kept: boolean;
}

export class ConnectionGuard {
  private open = 0;
  private readonly conns = new Map<Socket, Conn>();
  /** Connections that have not completed a request's headers yet, oldest first (a Set keeps insertion order). */
  private readonly fresh = new Set<Socket>();
  /** Connections between requests, longest idle first. */
  private readonly idle = new Set<Socket>();
  private closedForRoom = 0;
  private refused = 0;
  private warnedAt = 0;

  constructor(
    readonly max: number,
    private readonly onFull?: (stats: ReturnType<ConnectionGuard['stats']>) => void,
  ) {}

  /** TLS: counted once the handshake is done (its duration is bounded by the handshake timeout). */
  attach(server: HttpServer | HttpsServer, tls: boolean): void {
    server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => this.admit(socket));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.requested(req, res));
  }

  private admit(socket: Socket): void {
    this.open++;
    this.conns.set(socket, { openedAt: Date.now(), request: undefined, inFlight: 0, kept: false });
    this.fresh.add(socket);
    socket.once('close', () => {
      this.open--;
      this.conns.delete(socket);
      this.fresh.delete(socket);
      this.idle.delete(socket);
    });
    if (this.open > this.max) this.makeRoom(socket);
  }

  private makeRoom(newcomer: Socket): void {
    const oldest = this.first(this.fresh, (s) => s !== newcomer);
    const stale = oldest && Date.now() - this.conns.get(oldest)!.openedAt > FRESH_GRACE_MS ? oldest : undefined;
    const victim = stale ?? this.slowBody() ?? this.first(this.idle) ?? oldest ?? newcomer;
    if (victim === newcomer) {
      this.refused++;
      const now = Date.now();
      if (this.onFull && now - this.warnedAt > 10_000) {
        this.warnedAt = now;
        this.onFull(this.stats());
      }
    } else {
      this.closedForRoom++;
    }
    this.fresh.delete(victim);
    this.idle.delete(victim);
    victim.destroy();
  }

  private first(set: Set<Socket>, ok: (s: Socket) => boolean = () => true): Socket | undefined {
    for (const s of set) if (ok(s)) return s;
    return undefined;
  }

  /** The oldest connection whose request's body is still arriving (its handler has not started). */
  private slowBody(): Socket | undefined {
    for (const [s, c] of this.conns) if (!c.kept && c.request && !c.request.complete) return s;
    return undefined;
  }

  private requested(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    const c = this.conns.get(socket);
    if (!c) return;
    this.fresh.delete(socket);
    this.idle.delete(socket);
    c.request = req;
    c.inFlight++;
    res.once('close', () => {
      c.inFlight--;
      if (c.request === req) c.request = undefined;
      if (c.inFlight === 0 && !c.kept && !socket.destroyed) this.idle.add(socket);
    });
  }

  /** The connection carried a valid credential: it is never closed to make room. */
  trust(socket: Socket | undefined): void {
    const c = socket && this.conns.get(socket);
    if (!c) return;
    c.kept = true;
    this.fresh.delete(socket);
    this.idle.delete(socket);
  }

  /** An upgraded connection (a WebSocket): its session is running, it is never closed for room. */
  upgraded(socket: Socket): void {
    this.trust(socket);
  }

  stats(): { open: number; unauthenticated: number; max: number; closed_for_room: number; refused: number } {
    let kept = 0;
    for (const c of this.conns.values()) if (c.kept) kept++;
    return { open: this.open, unauthenticated: this.open - kept, max: this.max, closed_for_room: this.closedForRoom, refused: this.refused };
  }
}
