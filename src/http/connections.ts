// Open connections, bounded below the process's open-file limit. A connection counts as
// unauthenticated until one of its requests presents a valid credential; at the limit, the oldest
// unauthenticated connection is closed to make room (slow or idle clients without a key are the
// oldest: the trainer's connections authenticate within milliseconds of opening), and a new one is
// refused only when every open connection is authenticated.
import { readFileSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';

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

export class ConnectionGuard {
  private open = 0;
  /** Unauthenticated connections, oldest first (a Set keeps insertion order). */
  private readonly pending = new Set<Socket>();
  private closedForRoom = 0;

  constructor(readonly max: number) {}

  /** TLS: counted once the handshake is done (its duration is bounded by the handshake timeout). */
  attach(server: HttpServer | HttpsServer, tls: boolean): void {
    server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => this.admit(socket));
  }

  private admit(socket: Socket): void {
    this.open++;
    this.pending.add(socket);
    socket.once('close', () => {
      this.open--;
      this.pending.delete(socket);
    });
    if (this.open > this.max) {
      // The oldest unauthenticated connection, which is this one when it is the only one.
      const victim = this.pending.values().next().value!;
      this.pending.delete(victim);
      this.closedForRoom++;
      victim.destroy();
    }
  }

  /** The connection carried a valid credential: it is never closed to make room. */
  trust(socket: Socket | undefined): void {
    if (socket) this.pending.delete(socket);
  }

  stats(): { open: number; unauthenticated: number; max: number; closed_for_room: number } {
    return { open: this.open, unauthenticated: this.pending.size, max: this.max, closed_for_room: this.closedForRoom };
  }
}
