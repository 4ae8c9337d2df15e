// Which Docker engines the docker driver places sandboxes on: RFT_DOCKER_HOSTS, a comma-separated
// list of engine addresses as Docker itself writes them (unix:///var/run/docker.sock,
// tcp://10.0.0.2:2376), each with optional settings as a query string:
//   cap=N          sandboxes this replica may keep on the engine (default RFT_SANDBOX_CAP)
//   starts=N       containers this replica creates (and starts) on the engine at once, the others
//                  waiting their turn (default 8: a burst of hundreds at once saturates an engine
//                  and every exec waits behind them; bench/README.md, Docker burst)
//   name=NAME      how replicas name the engine in the store (default: host name + socket path for a
//                  unix socket, host:port for tcp); replicas sharing engines must agree on names
//   cert_path=DIR  ca.pem, cert.pem, key.pem for TLS (default DOCKER_CERT_PATH)
//   tls_verify=0|1 check the engine's certificate against ca.pem (default: DOCKER_TLS_VERIFY set)
// Without RFT_DOCKER_HOSTS: RFT_DOCKER_SOCKET, else DOCKER_HOST, else the local socket. TLS follows
// Docker's conventions: DOCKER_TLS_VERIFY (any non-empty value) turns TLS on and verifies the engine,
// DOCKER_TLS alone turns it on without verification, DOCKER_CERT_PATH holds the three PEM files.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { errors } from '../../../errors.js';
import type { DockerEndpoint } from './api.js';

export interface DockerHostSpec {
  /** The entry as configured, without its settings. */
  url: string;
  /** The engine's name in placement records. */
  name: string;
  cap: number;
  /** Containers created (and started) at once on the engine (set per engine; DEFAULT_STARTS otherwise). */
  starts?: number;
  socketPath?: string;
  host?: string;
  port?: number;
  tls?: { certPath: string; verify: boolean };
}

export interface DockerHostsInput {
  hosts?: string | undefined;
  socket?: string | undefined;
  dockerHost?: string | undefined;
  tlsVerify?: string | undefined;
  tls?: string | undefined;
  certPath?: string | undefined;
  /** Default per-engine cap. */
  cap: number;
}

const DEFAULT_SOCKET = '/var/run/docker.sock';

function bad(entry: string, why: string): Error {
  return errors.config(`RFT_DOCKER_HOSTS entry "${entry}": ${why}`, { entry });
}

function parseOne(raw: string, input: DockerHostsInput): DockerHostSpec {
  const q = raw.indexOf('?');
  const base = q >= 0 ? raw.slice(0, q) : raw;
  const params = new URLSearchParams(q >= 0 ? raw.slice(q + 1) : '');
  for (const k of params.keys()) {
    if (!['cap', 'starts', 'name', 'cert_path', 'tls_verify'].includes(k)) throw bad(raw, `unknown setting "${k}" (cap, starts, name, cert_path, tls_verify)`);
  }
  const startsRaw = params.get('starts');
  const starts = startsRaw === null ? undefined : Number(startsRaw);
  if (starts !== undefined && (!Number.isInteger(starts) || starts < 1 || starts > 1000)) throw bad(raw, 'starts must be an integer from 1 to 1000');
  const tuned = starts === undefined ? {} : { starts };
  const capRaw = params.get('cap');
  const cap = capRaw === null ? input.cap : Number(capRaw);
  if (!Number.isInteger(cap) || cap < 1) throw bad(raw, 'cap must be a positive integer');
  const name = params.get('name');
  if (name !== null && !/^[\w.:/@-]{1,200}$/.test(name)) throw bad(raw, 'name may hold letters, digits and . : / @ - _');
  if (base.startsWith('/') || base.startsWith('unix://')) {
    const socketPath = base.startsWith('/') ? base : base.slice('unix://'.length);
    if (!socketPath.startsWith('/')) throw bad(raw, 'a unix socket needs an absolute path (unix:///var/run/docker.sock)');
    return { url: `unix://${socketPath}`, name: name ?? `${hostname()}:${socketPath}`, cap, ...tuned, socketPath };
  }
  if (base.startsWith('tcp://')) {
    const m = /^tcp:\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/.exec(base);
    if (!m) throw bad(raw, 'expected tcp://host:port');
    const verifyParam = params.get('tls_verify');
    const verify = verifyParam !== null ? verifyParam === '1' || verifyParam === 'true' : !!input.tlsVerify;
    const certPath = params.get('cert_path') ?? input.certPath;
    const useTls = verify || verifyParam !== null || !!input.tls || params.get('cert_path') !== null;
    const host = (m[1] as string).replace(/^\[|\]$/g, '');
    const port = m[2] !== undefined ? Number(m[2]) : useTls ? 2376 : 2375;
    if (useTls && !certPath) throw bad(raw, 'TLS needs a certificate folder: cert_path=DIR or DOCKER_CERT_PATH');
    return {
      url: `tcp://${m[1]}:${port}`,
      name: name ?? `${m[1]}:${port}`,
      cap,
      ...tuned,
      host,
      port,
      ...(useTls ? { tls: { certPath: certPath as string, verify } } : {}),
    };
  }
  throw bad(raw, 'expected unix:///path/to/docker.sock or tcp://host:port');
}

/** The engines the configuration names, checked (names unique, settings known). */
export function parseDockerHosts(input: DockerHostsInput): DockerHostSpec[] {
  const list = input.hosts ?? (input.socket ? `unix://${input.socket}` : (input.dockerHost ?? `unix://${DEFAULT_SOCKET}`));
  const specs = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => parseOne(s, input));
  if (specs.length === 0) throw errors.config('RFT_DOCKER_HOSTS names no engine');
  const names = new Set<string>();
  for (const s of specs) {
    if (names.has(s.name)) throw errors.config(`RFT_DOCKER_HOSTS names the engine "${s.name}" twice`, { name: s.name });
    names.add(s.name);
  }
  return specs;
}

/** The connection details of an engine, reading its TLS files (a missing file is a boot error). */
export function endpointFor(spec: DockerHostSpec): DockerEndpoint {
  if (spec.socketPath) return { url: spec.url, socketPath: spec.socketPath };
  const base = { url: spec.url, host: spec.host as string, port: spec.port as number };
  if (!spec.tls) return base;
  const read = (file: string, required: boolean): Buffer | undefined => {
    try {
      return readFileSync(join(spec.tls!.certPath, file));
    } catch (e) {
      if (!required) return undefined;
      throw errors.config(`Docker engine ${spec.name}: cannot read ${file} in ${spec.tls!.certPath}: ${(e as Error).message}`, { engine: spec.name });
    }
  };
  const ca = read('ca.pem', spec.tls.verify);
  const cert = read('cert.pem', false);
  const key = read('key.pem', cert !== undefined);
  return { ...base, tls: { verify: spec.tls.verify, ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) } };
}
