// What a listener without credentials (the NeMo Gym door's, the private one) accepts, as MCP's
// transport security asks of local servers: trainers' clients, never a web page. A page whose own
// name was rebound to this address (DNS rebinding) sends its name as Host, so a Host that is not one
// of the listener's names is refused; a page's cross-site request carries Origin (every POST, every
// WebSocket handshake) or, for a plain GET, Sec-Fetch-Site, so those are refused unless configured.
// The trainers' clients (aiohttp, httpx, requests, websockets) send neither Origin nor Sec-Fetch-*.
import type { IncomingHttpHeaders } from 'node:http';
import { networkInterfaces } from 'node:os';
import { errors, type RftError } from '../errors.js';
import { isLoopback } from '../loopback.js';

export interface LocalRules {
  /** The listener's name in messages (nemo-gym, private). */
  listener: string;
  /** The address it listens on: its own name when specific, every interface's address when a wildcard. */
  bound: string;
  /** Host names it also answers to ('*': any). */
  hosts: readonly string[];
  /** Browser origins it accepts (scheme://host[:port]; '*': any). */
  origins: readonly string[];
  /** The settings that hold those lists, named in the refusals. */
  hostsSetting: string;
  originsSetting: string;
}

/** The name of a Host header: without its port or IPv6 brackets, lowercase, without a trailing dot. */
export function hostName(header: string): string {
  let h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end > 0 ? h.slice(1, end) : h;
  }
  const colon = h.indexOf(':');
  // name:port; several colons is a bare IPv6 address, kept whole
  if (colon !== -1 && h.indexOf(':', colon + 1) === -1) h = h.slice(0, colon);
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/** An origin as browsers serialize it (scheme://host[:port], default port dropped), or the text itself when it is not a URL. */
export function normalizeOrigin(origin: string): string {
  try {
    const o = new URL(origin.trim()).origin;
    return o === 'null' ? origin.trim().toLowerCase() : o;
  } catch {
    return origin.trim().toLowerCase();
  }
}

const WILDCARDS = new Set(['0.0.0.0', '::', '[::]', '']);

function ownNames(rules: LocalRules): Set<string> {
  const names = new Set(rules.hosts.map(hostName));
  if (!WILDCARDS.has(rules.bound)) names.add(hostName(rules.bound));
  else for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) names.add(a.address.toLowerCase());
  return names;
}

/** Checks a request's (or a WebSocket handshake's) headers: the refusal, or undefined when it may go on. */
export function localOnly(rules: LocalRules): (headers: IncomingHttpHeaders) => RftError | undefined {
  const anyHost = rules.hosts.includes('*');
  const names = ownNames(rules);
  const anyOrigin = rules.origins.includes('*');
  const origins = new Set(rules.origins.map(normalizeOrigin));
  return (headers) => {
    const host = headers.host;
    // (HTTP/1.0 without Host is no browser; HTTP/1.1 without one is refused by Node itself)
    if (host !== undefined && !anyHost) {
      const name = hostName(host);
      if (!isLoopback(name) && !names.has(name)) return errors.hostNotAllowed(host, rules.listener, rules.hostsSetting);
    }
    const origin = headers.origin;
    if (origin !== undefined) {
      if (!anyOrigin && !origins.has(normalizeOrigin(origin))) return errors.originNotAllowed(origin, rules.listener, rules.originsSetting);
      return undefined;
    }
    // A page's GET without Origin (an <img>, a <script>, a form's navigation) still says where it came from.
    const site = headers['sec-fetch-site'];
    if (!anyOrigin && (site === 'cross-site' || site === 'same-site')) return errors.originNotAllowed(`(none; Sec-Fetch-Site: ${site})`, rules.listener, rules.originsSetting);
    return undefined;
  };
}
