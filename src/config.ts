// One zod schema for the whole configuration. Sources, later wins: defaults, the JSON config file
// (RFT_CONFIG or --config; same names as the environment), the environment. Checked once at boot.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { errors } from './errors.js';
import { isLoopback } from './loopback.js';
import { DRIVERS } from './sandbox/drivers/index.js';
import type { SandboxSettings } from './sandbox/settings.js';

export { isLoopback };

/** A bridged MCP server's start bound when neither its mcp.json entry nor RFT_MCP_START_TIMEOUT_MS sets one. */
export const DEFAULT_MCP_START_TIMEOUT_MS = 30_000;

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max);
const bool = z.union([z.boolean(), z.enum(['1', '0', 'true', 'false', 'yes', 'no'])]).transform((v) => v === true || v === '1' || v === 'true' || v === 'yes');
const list = z
  .union([z.string(), z.array(z.string())])
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter(Boolean));

const KEY_MIN_LENGTH = 16;

const apiKeys = list.transform((entries, ctx) =>
  entries.map((entry, i) => {
    const sep = entry.indexOf(':');
    const label = sep > 0 ? entry.slice(0, sep) : `key${i + 1}`;
    const key = sep > 0 ? entry.slice(sep + 1) : entry;
    if (key.length < KEY_MIN_LENGTH) {
      ctx.addIssue({ code: 'custom', message: `key "${label}" is shorter than ${KEY_MIN_LENGTH} characters` });
    }
    return { label, key };
  }),
);

const signingSecrets = list.transform((entries, ctx) =>
  entries.map((secret, i) => {
    if (!secret.startsWith('whsec_') || Buffer.from(secret.slice(6), 'base64').length < 16) {
      ctx.addIssue({ code: 'custom', message: `secret #${i + 1} must be "whsec_" + base64 of at least 16 bytes` });
    }
    return secret;
  }),
);

// Header names a key may be read from: HTTP tokens, and none the server reads for anything else.
const RESERVED_HEADERS = new Set(['host', 'content-type', 'content-length', 'transfer-encoding', 'connection', 'cookie', 'x-request-id', 'webhook-id', 'webhook-timestamp', 'webhook-signature']);
export const keyHeaderList = list.transform((names, ctx) => {
  for (const n of names) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(n)) ctx.addIssue({ code: 'custom', message: `"${n}" is not an HTTP header name` });
    else if (RESERVED_HEADERS.has(n.toLowerCase()) || n.toLowerCase().startsWith('x-forwarded-')) {
      ctx.addIssue({ code: 'custom', message: `"${n}" cannot carry a key (the server reads it for something else)` });
    }
  }
  if (names.length === 0) ctx.addIssue({ code: 'custom', message: 'name at least one header' });
  if (new Set(names.map((n) => n.toLowerCase())).size !== names.length) ctx.addIssue({ code: 'custom', message: 'a header is listed twice' });
  return names;
});

// A credential-less listener's extra Host names ('*': any) and browser origins ('*': any; else scheme://host[:port]).
const hostList = list.transform((names, ctx) => {
  for (const n of names) if (n !== '*' && !/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._:-]+)$/.test(n)) ctx.addIssue({ code: 'custom', message: `"${n}" is not a host name or address` });
  return names;
});
const originList = list.transform((origins, ctx) => {
  for (const o of origins) {
    let ok = o === '*';
    try {
      ok ||= /^https?:$/.test(new URL(o).protocol) && new URL(o).origin === o.replace(/\/$/, '');
    } catch {
      ok = false;
    }
    if (!ok) ctx.addIssue({ code: 'custom', message: `"${o}" is not an origin (http[s]://host[:port], as a browser sends it) or *` });
  }
  return origins;
});

type Intersect<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
const driverSettings = Object.assign({}, ...DRIVERS.map((d) => d.settings)) as Intersect<(typeof DRIVERS)[number]['settings']>;

export const configSchema = z.object({
  PORT: int(0, 65535).default(8787),
  HOST: z.string().min(1).default('127.0.0.1'),
  RFT_DATA_DIR: z.string().min(1).default('./data'),
  RFT_API_KEYS: apiKeys.default([]),
  RFT_SIGNING_SECRETS: signingSecrets.default([]),
  /** Headers a static key is read from, in order: Authorization takes "Bearer <key>", any other the bare key. */
  RFT_API_KEY_HEADERS: keyHeaderList.default(['Authorization']),
  /** Failed authentications per client address and window before the address is refused (0: no limit). */
  RFT_AUTH_FAILURE_LIMIT: int(0).default(20),
  RFT_AUTH_FAILURE_WINDOW_MS: int(1000).default(60_000),
  /** Create a key in the data dir at first start when no credential is configured. */
  RFT_AUTO_KEY: bool.default(true),
  RFT_TOOL_BUDGET: int(0).default(50),
  RFT_TOOLS_DIR: z.string().default('tools'),
  /** MCP servers to bridge as tools (mcpServers JSON); default mcp.json beside the tools folder, none if absent. */
  RFT_MCP_CONFIG: z.string().min(1).optional(),
  /**
   * How long a bridged MCP server's instance may take to start (its process, then the MCP handshake) when its
   * mcp.json entry sets no `startTimeoutMs`. Not counted in the tool's timeout; past it the call answers 503
   * RFT_ERR_TOOL_START_TIMEOUT, not run and not charged.
   */
  RFT_MCP_START_TIMEOUT_MS: int(100, 600_000).default(DEFAULT_MCP_START_TIMEOUT_MS),
  RFT_GRADERS_DIR: z.string().default('graders'),
  /**
   * Type-check the TypeScript units at boot, before loading them (RFT_ERR_UNIT_TYPE names the file and line).
   * auto: on in development (NODE_ENV=development, as `npm run dev` sets it), off otherwise.
   */
  RFT_UNITS_TYPECHECK: z.union([z.literal('auto'), bool]).default('auto'),
  RFT_DEFAULT_GRADER: z.string().optional(),
  /** The job body (model, max_episode_steps, hyperparameters); default job.json beside the tools folder, none if absent. */
  RFT_JOB_FILE: z.string().min(1).optional(),
  RFT_TOOL_TIMEOUT_MS: int(1, 600_000).default(60_000),
  RFT_MAX_OUTPUT_BYTES: int(256, 1_000_000).default(16_384),
  RFT_GRADER_TIMEOUT_MS: int(1, 600_000).default(300_000),
  RFT_BODY_LIMIT_BYTES: int(1024).default(1_048_576),
  /** Deepest nesting of arrays and objects in a request body; at most 1,000 (past ~3,000 levels the store's JSON.stringify fails: ours). */
  RFT_MAX_JSON_DEPTH: int(8, 1_000).default(64),
  /** Time to receive a request's headers, and its whole request (headers and body); the handler's time is not counted. */
  RFT_HEADERS_TIMEOUT_MS: int(1000).default(10_000),
  RFT_BODY_TIMEOUT_MS: int(1000).default(30_000),
  /**
   * Open connections of the whole process, every listener's; 0 = half the open-file limit. The credential-less
   * listeners' shares (RFT_*_MAX_CONNECTIONS) come off it, the main listener keeps the rest (at least half).
   */
  RFT_MAX_CONNECTIONS: int(0).default(0),
  RFT_RATE_LIMIT: int(0).default(6000),
  RFT_RATE_WINDOW_MS: int(1000).default(60_000),
  /** Redis for rate limits shared by every replica (redis:// or rediss://); unset: each replica counts alone. */
  RFT_REDIS_URL: z.string().regex(/^rediss?:\/\//, 'redis://[user:password@]host:6379[/db] or rediss://').optional(),
  RFT_TLS_CERT: z.string().optional(),
  RFT_TLS_KEY: z.string().optional(),
  RFT_TRUST_PROXY: bool.default(false),
  RFT_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  RFT_STORE: z.enum(['sqlite', 'postgres']).default('sqlite'),
  /** Postgres connection URL; required when RFT_STORE=postgres. */
  RFT_DATABASE_URL: z.string().optional(),
  /** Postgres schema that holds the tables (created at first connect). */
  RFT_PG_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, 'lowercase letters, digits and _').default('rft'),
  RFT_PG_POOL_SIZE: int(1, 1000).default(10),
  /** This replica's id, stable across its restarts (Postgres: a booting replica interrupts only its own calls). */
  RFT_INSTANCE_ID: z.string().min(1).max(200).optional(),
  /** full: every reply's writes are fsynced first (survives power loss); normal: committed only (survives kill -9). */
  RFT_SQLITE_SYNC: z.enum(['full', 'normal']).default('full'),
  /** A driver of src/sandbox/drivers/index.ts, `auto` (the first available there) or `none`. */
  RFT_SANDBOX: z.enum(['auto', ...DRIVERS.map((d) => d.name), 'none']).default('auto'),
  /**
   * Live sandboxes at most; unset, per driver: bwrap 1024 (an idle one costs about 0.75 MB and 2
   * processes), docker 512 (about 5 MB and 3 processes on the engine's host). src/sandbox/drivers/<name>/index.ts.
   */
  RFT_SANDBOX_CAP: int(1).optional(),
  RFT_SANDBOX_QUEUE: int(0).default(2000),
  RFT_SANDBOX_QUEUE_TIMEOUT_MS: int(0).default(120_000),
  RFT_SANDBOX_TTL_MS: int(1000).default(30 * 60_000),
  RFT_SANDBOX_GRACE_MS: int(0).default(120_000),
  RFT_SANDBOX_TEMPLATES: z.string().default('examples'),
  RFT_SANDBOX_MEMORY_MB: int(16).default(512),
  RFT_SANDBOX_CPU_SECONDS: int(1).default(60),
  RFT_SANDBOX_PIDS: int(8).default(128),
  RFT_SANDBOX_FILE_MB: int(1).default(64),
  RFT_SANDBOX_DISK_MB: int(1).default(256),
  /** Files a sandbox may create (workspace, /tmp, /dev/shm): each pins ~1 KB of kernel memory. */
  RFT_SANDBOX_INODES: int(64).default(16_384),
  RFT_SANDBOX_EXEC_TIMEOUT_MS: int(100).default(30_000),
  /**
   * The network a Harbor task's sandbox gets when its task.toml asks for one (network_mode "public"):
   * `none` (the default: no network for any task), or the name of a Docker network the server's
   * operator made for it (never the default bridge). "allowlist" tasks get none: hosts are not filtered here.
   */
  RFT_HARBOR_NETWORK: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'none, or a Docker network name')
    .refine((v) => v !== 'bridge' && v !== 'host' && v !== 'default', 'the default bridge and the host network are refused: name a network made for the tasks')
    .default('none'),
  // Each driver's own settings (RFT_DOCKER_*, RFT_SANDBOX_WARM, ...): its module in src/sandbox/drivers/.
  ...driverSettings,
  OPENAI_BASE_URL: z.string().url().optional(),
  OPENAI_API_KEY: z.string().optional(),
  RFT_MODEL_TIMEOUT_MS: int(100, 600_000).default(60_000),
  RFT_MODEL_MAX_RETRIES: int(0, 10).default(2),
  RFT_EMBEDDING_MODEL: z.string().min(1).optional(),
  /** Prometheus metrics (GET /metrics, behind the credentials like every route). */
  RFT_METRICS: bool.default(true),
  /** A second listener serving only /metrics, without credentials, for an in-cluster scraper. */
  RFT_METRICS_PORT: int(0, 65535).optional(),
  RFT_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** Its share of RFT_MAX_CONNECTIONS (a scraper needs one or two), and the Host names and browser origins it accepts, as the door listeners'. */
  RFT_METRICS_MAX_CONNECTIONS: int(1).default(32),
  RFT_METRICS_ALLOWED_HOSTS: hostList.default([]),
  RFT_METRICS_ALLOWED_ORIGINS: originList.default([]),
  /**
   * Folders holding environments (src/environments): each is one (it has a job.json) or holds one per
   * subfolder. Comma-separated; default the working directory (an init'ed project) and its examples/.
   */
  RFT_ENVIRONMENTS: list.default(['.', 'examples']),
  /** The NeMo Gym door's own listener (src/doors/nemo-gym), when set. Gym's client sends no key. */
  RFT_NEMO_GYM_PORT: int(0, 65535).optional(),
  RFT_NEMO_GYM_HOST: z.string().min(1).default('127.0.0.1'),
  /** Lets the NeMo Gym door listen beyond loopback (it takes no credential: a private network only). */
  RFT_NEMO_GYM_ALLOW_REMOTE: bool.default(false),
  /** Its share of RFT_MAX_CONNECTIONS; 0 = a quarter. At the cap the connections that sent nothing useful are closed first. */
  RFT_NEMO_GYM_MAX_CONNECTIONS: int(0).default(0),
  /** Host names it answers to beside loopback's and its own address ('*': any): the name the trainer calls it by when remote. */
  RFT_NEMO_GYM_ALLOWED_HOSTS: hostList.default([]),
  /** Browser origins it accepts ('*': any); none by default: a request with an Origin header is refused. */
  RFT_NEMO_GYM_ALLOWED_ORIGINS: originList.default([]),
  /** The environment every NeMo Gym rollout belongs to; unset, the row's tools decide. */
  RFT_NEMO_GYM_ENVIRONMENT: z.string().min(1).optional(),
  // Gym's expose_tools_over_mcp: /mcp on the door and its token in the seed reply (agents without MCP ignore both).
  RFT_NEMO_GYM_MCP: bool.default(true),
  /**
   * The private listener (src/doors/private), when set: the doors of trainers whose clients send no
   * credential (OpenEnv, slime and OpenRLHF reward calls, SandboxFusion's run_code).
   */
  RFT_PRIVATE_PORT: int(0, 65535).optional(),
  RFT_PRIVATE_HOST: z.string().min(1).default('127.0.0.1'),
  /** Lets the private listener listen beyond loopback (it takes no credential: the trainers' private network only). */
  RFT_PRIVATE_ALLOW_REMOTE: bool.default(false),
  /** As RFT_NEMO_GYM_MAX_CONNECTIONS, _ALLOWED_HOSTS and _ALLOWED_ORIGINS, for the private listener. */
  RFT_PRIVATE_MAX_CONNECTIONS: int(0).default(0),
  RFT_PRIVATE_ALLOWED_HOSTS: hostList.default([]),
  RFT_PRIVATE_ALLOWED_ORIGINS: originList.default([]),
  /** An OpenEnv episode with no frame this long ends: graded with an empty answer, as an end by the client (docs/openenv.md). */
  RFT_OPENENV_IDLE_MS: int(100).default(900_000),
  /** The ORS door (src/doors/ors) at the root of the main listener, behind its keys (also read from X-API-Key). */
  RFT_ORS: bool.default(true),
  /** The tool that ends an ORS episode: its {answer} is graded, its reward the grader's score. */
  RFT_ORS_SUBMIT_TOOL: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/).default('submit'),
  /** Comment lines on a running /call stream (the client gives up after 30 s without a byte). */
  RFT_ORS_PING_MS: int(100, 25_000).default(10_000),
  /** A session unused (no call, no /ping) this long is deleted and its rollout ended (ORS's reaper: 900 s). */
  RFT_ORS_IDLE_MS: int(1_000).default(900_000),
});

export type RawConfig = z.output<typeof configSchema>;

export interface AppConfig {
  port: number;
  host: string;
  dataDir: string;
  apiKeys: { label: string; key: string }[];
  signingSecrets: string[];
  autoKey: boolean;
  toolBudget: number;
  toolsDir: string;
  gradersDir: string;
  /** RFT_UNITS_TYPECHECK resolved: type-check the units before loading them. */
  unitsTypecheck: boolean;
  /**
   * The mcp.json to bridge; `required` when named explicitly (a missing file then stops the boot);
   * `startTimeoutMs`, a server's start bound when its entry sets none (RFT_MCP_START_TIMEOUT_MS).
   */
  mcpConfig: { path: string; required: boolean; startTimeoutMs: number };
  /** What a host (unsandboxed) stdio MCP server inherits from this environment; never the server's secrets. */
  mcpInheritedEnv: Record<string, string>;
  defaultGrader: string | undefined;
  /** The project's job.json; `required` when named explicitly (a missing file then stops the boot). */
  jobFile: { path: string; required: boolean };
  toolTimeoutMs: number;
  maxOutputBytes: number;
  graderTimeoutMs: number;
  bodyLimitBytes: number;
  maxJsonDepth: number;
  apiKeyHeaders: string[];
  authFailures: { max: number; windowMs: number };
  connections: { headersTimeoutMs: number; bodyTimeoutMs: number; max: number };
  rateLimit: { max: number; windowMs: number; redisUrl: string | undefined };
  tls: { cert: string; key: string } | undefined;
  trustProxy: boolean;
  logLevel: RawConfig['RFT_LOG_LEVEL'];
  store:
    | { kind: 'sqlite'; sync: 'full' | 'normal' }
    | { kind: 'postgres'; url: string; schema: string; poolSize: number };
  /** Defaults to hostname:port, which differs between replicas and survives a restart. */
  instanceId: string;
  /** The sandbox section: the settings every driver shares and each driver's own keys (src/sandbox/settings.ts). */
  sandbox: SandboxSettings;
  openai: ModelApiOptions;
  /** port: the credential-free /metrics listener, when set. */
  metrics: { enabled: boolean; port: number | undefined; host: string; maxConnections: number; allowedHosts: string[]; allowedOrigins: string[] };
  /** Folders searched for environments (src/environments/load.ts). */
  environmentsDirs: string[];
  /** The NeMo Gym door's listener (port undefined: no door). */
  nemoGym: DoorListenerConfig & { environment: string | undefined; mcp: boolean };
  /** The credential-less listener of the OpenEnv, reward and SandboxFusion doors. */
  private: DoorListenerConfig;
  /** The OpenEnv door: an episode idle this long ends without an answer. */
  openenv: { idleMs: number };
  /** The ORS door on the main listener (enabled false: no routes). */
  ors: { enabled: boolean; submitTool: string; pingMs: number; idleMs: number };
}

/** A listener without credentials (src/doors/listen.ts). */
export interface DoorListenerConfig {
  port: number | undefined;
  host: string;
  allowRemote: boolean;
  /** Its share of the process's connections; 0: a quarter of them. */
  maxConnections: number;
  /** Host names and browser origins it accepts beside its own ('*': any). */
  allowedHosts: string[];
  allowedOrigins: string[];
}

/** The model API used by score_model, label_model and cosine graders (openai SDK options). */
export interface ModelApiOptions {
  baseURL?: string;
  apiKey?: string;
  timeoutMs: number;
  maxRetries: number;
  embeddingModel?: string;
}

const KNOWN = new Set(Object.keys(configSchema.shape));

export type Env = Record<string, string | undefined>;

/** The variables MCP clients pass to the stdio servers they start (as the SDK's own client does). */
const MCP_INHERITED = ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'LANG', 'TMPDIR'] as const;

/** The process environment: config.ts is the one module that reads it. */
export function processEnv(): Env {
  return process.env;
}

export function loadConfig(
  env: Env = processEnv(),
  opts: { configFile?: string | undefined; overrides?: Record<string, unknown> } = {},
): AppConfig {
  const file = opts.configFile ?? env.RFT_CONFIG;
  let fromFile: Record<string, unknown> = {};
  if (file) {
    try {
      fromFile = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (e) {
      throw errors.config(`cannot read config file ${file}: ${(e as Error).message}`, { file });
    }
    const unknown = Object.keys(fromFile).filter((k) => !KNOWN.has(k));
    if (unknown.length) throw errors.config(`unknown setting(s) in ${file}: ${unknown.join(', ')}`, { file, unknown });
  }
  const fromEnv = Object.fromEntries(Object.entries(env).filter(([k, v]) => KNOWN.has(k) && v !== undefined && v !== ''));
  const parsed = configSchema.safeParse({ ...fromFile, ...fromEnv, ...opts.overrides });
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw errors.config(`invalid configuration:\n  ${issues.join('\n  ')}`, { issues });
  }
  const c = parsed.data;
  if (c.RFT_STORE === 'postgres' && !/^postgres(ql)?:\/\//.test(c.RFT_DATABASE_URL ?? '')) {
    throw errors.config('RFT_STORE=postgres needs RFT_DATABASE_URL=postgres://user:password@host:5432/db');
  }
  if (c.RFT_BODY_TIMEOUT_MS < c.RFT_HEADERS_TIMEOUT_MS) {
    throw errors.config('RFT_BODY_TIMEOUT_MS (the whole request) must be at least RFT_HEADERS_TIMEOUT_MS (its headers)');
  }
  if (c.RFT_METRICS_PORT !== undefined && !c.RFT_METRICS) {
    throw errors.config('RFT_METRICS_PORT serves the metrics, which RFT_METRICS=false turns off: set one or the other');
  }
  if (c.RFT_NEMO_GYM_PORT !== undefined && !c.RFT_NEMO_GYM_ALLOW_REMOTE && !isLoopback(c.RFT_NEMO_GYM_HOST)) {
    throw errors.nemoGymRemote(c.RFT_NEMO_GYM_HOST);
  }
  if (c.RFT_PRIVATE_PORT !== undefined && !c.RFT_PRIVATE_ALLOW_REMOTE && !isLoopback(c.RFT_PRIVATE_HOST)) {
    throw errors.privateRemote(c.RFT_PRIVATE_HOST);
  }
  if ((c.RFT_TLS_CERT === undefined) !== (c.RFT_TLS_KEY === undefined)) {
    throw errors.config('RFT_TLS_CERT and RFT_TLS_KEY must be set together');
  }
  return {
    port: c.PORT,
    host: c.HOST,
    dataDir: resolve(c.RFT_DATA_DIR),
    apiKeys: c.RFT_API_KEYS,
    signingSecrets: c.RFT_SIGNING_SECRETS,
    autoKey: c.RFT_AUTO_KEY,
    toolBudget: c.RFT_TOOL_BUDGET,
    toolsDir: resolve(c.RFT_TOOLS_DIR),
    gradersDir: resolve(c.RFT_GRADERS_DIR),
    unitsTypecheck: c.RFT_UNITS_TYPECHECK === 'auto' ? env.NODE_ENV === 'development' : c.RFT_UNITS_TYPECHECK,
    mcpConfig: {
      ...(c.RFT_MCP_CONFIG ? { path: resolve(c.RFT_MCP_CONFIG), required: true } : { path: join(dirname(resolve(c.RFT_TOOLS_DIR)), 'mcp.json'), required: false }),
      startTimeoutMs: c.RFT_MCP_START_TIMEOUT_MS,
    },
    mcpInheritedEnv: Object.fromEntries(MCP_INHERITED.flatMap((k) => (env[k] ? [[k, env[k]]] : []))),
    defaultGrader: c.RFT_DEFAULT_GRADER,
    jobFile: c.RFT_JOB_FILE
      ? { path: resolve(c.RFT_JOB_FILE), required: true }
      : { path: join(dirname(resolve(c.RFT_TOOLS_DIR)), 'job.json'), required: false },
    toolTimeoutMs: c.RFT_TOOL_TIMEOUT_MS,
    maxOutputBytes: c.RFT_MAX_OUTPUT_BYTES,
    graderTimeoutMs: c.RFT_GRADER_TIMEOUT_MS,
    bodyLimitBytes: c.RFT_BODY_LIMIT_BYTES,
    maxJsonDepth: c.RFT_MAX_JSON_DEPTH,
    apiKeyHeaders: c.RFT_API_KEY_HEADERS,
    authFailures: { max: c.RFT_AUTH_FAILURE_LIMIT, windowMs: c.RFT_AUTH_FAILURE_WINDOW_MS },
    connections: { headersTimeoutMs: c.RFT_HEADERS_TIMEOUT_MS, bodyTimeoutMs: c.RFT_BODY_TIMEOUT_MS, max: c.RFT_MAX_CONNECTIONS },
    rateLimit: { max: c.RFT_RATE_LIMIT, windowMs: c.RFT_RATE_WINDOW_MS, redisUrl: c.RFT_REDIS_URL },
    tls: c.RFT_TLS_CERT && c.RFT_TLS_KEY ? { cert: c.RFT_TLS_CERT, key: c.RFT_TLS_KEY } : undefined,
    trustProxy: c.RFT_TRUST_PROXY,
    logLevel: c.RFT_LOG_LEVEL,
    store:
      c.RFT_STORE === 'postgres'
        ? { kind: 'postgres', url: c.RFT_DATABASE_URL!, schema: c.RFT_PG_SCHEMA, poolSize: c.RFT_PG_POOL_SIZE }
        : { kind: 'sqlite', sync: c.RFT_SQLITE_SYNC },
    instanceId: c.RFT_INSTANCE_ID ?? `${hostname()}:${c.PORT}`,
    sandbox: {
      driver: c.RFT_SANDBOX,
      cap: c.RFT_SANDBOX_CAP,
      maxQueue: c.RFT_SANDBOX_QUEUE,
      queueTimeoutMs: c.RFT_SANDBOX_QUEUE_TIMEOUT_MS,
      ttlMs: c.RFT_SANDBOX_TTL_MS,
      graceMs: c.RFT_SANDBOX_GRACE_MS,
      templatesRoot: resolve(c.RFT_SANDBOX_TEMPLATES),
      harborNetwork: c.RFT_HARBOR_NETWORK === 'none' ? undefined : c.RFT_HARBOR_NETWORK,
      ...Object.assign({}, ...DRIVERS.map((d) => d.options(c, c.RFT_SANDBOX_CAP))),
      limits: {
        cpuSeconds: c.RFT_SANDBOX_CPU_SECONDS,
        memoryBytes: c.RFT_SANDBOX_MEMORY_MB * 1024 * 1024,
        maxProcesses: c.RFT_SANDBOX_PIDS,
        maxFileBytes: c.RFT_SANDBOX_FILE_MB * 1024 * 1024,
        diskBytes: c.RFT_SANDBOX_DISK_MB * 1024 * 1024,
        inodes: c.RFT_SANDBOX_INODES,
        wallTimeoutMs: c.RFT_SANDBOX_EXEC_TIMEOUT_MS,
        maxOutputBytes: c.RFT_MAX_OUTPUT_BYTES,
      },
    },
    openai: {
      ...(c.OPENAI_BASE_URL ? { baseURL: c.OPENAI_BASE_URL } : {}),
      ...(c.OPENAI_API_KEY ? { apiKey: c.OPENAI_API_KEY } : {}),
      timeoutMs: c.RFT_MODEL_TIMEOUT_MS,
      maxRetries: c.RFT_MODEL_MAX_RETRIES,
      ...(c.RFT_EMBEDDING_MODEL ? { embeddingModel: c.RFT_EMBEDDING_MODEL } : {}),
    },
    metrics: {
      enabled: c.RFT_METRICS, port: c.RFT_METRICS_PORT, host: c.RFT_METRICS_HOST, maxConnections: c.RFT_METRICS_MAX_CONNECTIONS,
      allowedHosts: c.RFT_METRICS_ALLOWED_HOSTS, allowedOrigins: c.RFT_METRICS_ALLOWED_ORIGINS,
    },
    environmentsDirs: c.RFT_ENVIRONMENTS.map((d) => resolve(d)),
    nemoGym: {
      port: c.RFT_NEMO_GYM_PORT, host: c.RFT_NEMO_GYM_HOST, allowRemote: c.RFT_NEMO_GYM_ALLOW_REMOTE, maxConnections: c.RFT_NEMO_GYM_MAX_CONNECTIONS,
      allowedHosts: c.RFT_NEMO_GYM_ALLOWED_HOSTS, allowedOrigins: c.RFT_NEMO_GYM_ALLOWED_ORIGINS, environment: c.RFT_NEMO_GYM_ENVIRONMENT, mcp: c.RFT_NEMO_GYM_MCP,
    },
    private: {
      port: c.RFT_PRIVATE_PORT, host: c.RFT_PRIVATE_HOST, allowRemote: c.RFT_PRIVATE_ALLOW_REMOTE, maxConnections: c.RFT_PRIVATE_MAX_CONNECTIONS,
      allowedHosts: c.RFT_PRIVATE_ALLOWED_HOSTS, allowedOrigins: c.RFT_PRIVATE_ALLOWED_ORIGINS,
    },
    openenv: { idleMs: c.RFT_OPENENV_IDLE_MS },
    ors: { enabled: c.RFT_ORS, submitTool: c.RFT_ORS_SUBMIT_TOOL, pingMs: c.RFT_ORS_PING_MS, idleMs: c.RFT_ORS_IDLE_MS },
  };
}

/** A connection URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}


/**
 * What the CLI's client commands (rollout, replay, regrade, export, import) read from the
 * environment: where the server is, how to authenticate to it, and the model API for rollouts.
 */
const cliEnvSchema = z.object({
  /** `keys create` prints the job's headers for the first of these. */
  RFT_API_KEY_HEADERS: keyHeaderList.optional(),
  RFT_SERVER: z.string().min(1).optional(),
  RFT_API_KEY: z.string().min(1).optional(),
  RFT_SIGNING_SECRET: z.string().min(1).optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: z.string().min(1).optional(),
});

export type CliEnv = z.output<typeof cliEnvSchema>;

export function loadCliEnv(env: Env = processEnv()): CliEnv {
  const known = Object.fromEntries(Object.keys(cliEnvSchema.shape).flatMap((k) => (env[k] ? [[k, env[k]]] : [])));
  const parsed = cliEnvSchema.safeParse(known);
  if (!parsed.success) throw errors.config(`invalid environment: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join(', ')}`);
  return parsed.data;
}
