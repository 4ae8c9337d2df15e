// Every error the server can answer with, in one place. Codes are public: clients and tests match on
// `code`, never on message text. A status below 500 is a caller's mistake and is shown to the model;
// 500+ makes the trainer retry and then drop the rollout, so it is reserved for "could not record"
// and "could not grade".

export class RftError extends Error {
  readonly code: string;
  readonly statusCode: number;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: string, statusCode: number, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'RftError';
    this.code = code;
    this.statusCode = statusCode;
    this.details = details;
  }

  toJSON(): Record<string, unknown> {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

type Factory<A extends unknown[]> = ((...args: A) => RftError) & { code: string; statusCode: number };

function define<A extends unknown[]>(
  code: string,
  statusCode: number,
  build: (...args: A) => [message: string, details?: Record<string, unknown> | undefined],
): Factory<A> {
  const f = ((...args: A) => {
    const [message, details] = build(...args);
    return new RftError(code, statusCode, message, details);
  }) as Factory<A>;
  f.code = code;
  f.statusCode = statusCode;
  return f;
}

export const errors = {
  // configuration and boot (thrown before listen; the status is irrelevant there)
  config: define('RFT_ERR_CONFIG', 500, (msg: string, details?: Record<string, unknown>) => [msg, details]),
  unitLoad: define('RFT_ERR_UNIT_LOAD', 500, (file: string, why: string) => [`${file}: ${why}`, { file }]),
  unitDuplicate: define('RFT_ERR_UNIT_DUPLICATE', 500, (kind: string, name: string, files: string[]) => [
    `${kind} "${name}" is defined twice: ${files.join(' and ')}`,
    { kind, name, files },
  ]),
  // A unit file that does not type-check (RFT_UNITS_TYPECHECK): the first error, with its file and line.
  unitType: define('RFT_ERR_UNIT_TYPE', 500, (file: string, line: number, message: string, more: number) => [
    `${file}:${line}: ${message}${more > 0 ? ` (and ${more} more type error${more > 1 ? 's' : ''})` : ''}`,
    { file, line, type_error: message },
  ]),
  insecureListen: define('RFT_ERR_INSECURE_LISTEN', 500, (host: string) => [
    `refusing to listen on ${host} with no credential configured: set RFT_API_KEYS or RFT_SIGNING_SECRETS`,
    { host },
  ]),

  nemoGymRemote: define('RFT_ERR_NEMO_GYM_REMOTE', 500, (host: string) => [
    `refusing to serve the NeMo Gym door on ${host}: Gym's client sends no credential, so the door must stay on loopback or the trainers' private network (set RFT_NEMO_GYM_ALLOW_REMOTE=1 for the latter)`,
    { host },
  ]),
  privateRemote: define('RFT_ERR_PRIVATE_REMOTE', 500, (host: string) => [
    `refusing to serve the private listener on ${host}: its trainers' clients (OpenEnv, slime, OpenRLHF, SandboxFusion) send no credential, so it must stay on loopback or the trainers' private network (set RFT_PRIVATE_ALLOW_REMOTE=1 for the latter)`,
    { host },
  ]),
  // A credential-less listener (NeMo Gym's, the private one) serves trainers' clients, never a web page:
  // a Host it does not answer to (DNS rebinding) or a browser's request (an Origin header) is refused,
  // as MCP's transport rules ask of local servers. The setting named lets a deployment allow one.
  hostNotAllowed: define('RFT_ERR_HOST_NOT_ALLOWED', 403, (host: string, listener: string, setting: string) => [
    `the ${listener} listener does not answer to Host "${host.slice(0, 200)}" (loopback names and its own address only): add the name to ${setting} if the trainer calls it by that name`,
    { host: host.slice(0, 200), listener, setting },
  ]),
  originNotAllowed: define('RFT_ERR_ORIGIN_NOT_ALLOWED', 403, (origin: string, listener: string, setting: string) => [
    `the ${listener} listener takes no credential and refuses requests from web pages (Origin "${origin.slice(0, 200)}"): add the origin to ${setting} to allow it`,
    { origin: origin.slice(0, 200), listener, setting },
  ]),
  connectionShares: define('RFT_ERR_CONNECTION_SHARES', 500, (total: number, shares: Record<string, number>) => [
    `the credential-less listeners' connection caps (${Object.entries(shares).map(([k, v]) => `${k} ${v}`).join(', ')}) leave the main listener less than half of the ${total} connections this process may hold (RFT_MAX_CONNECTIONS, default half the open-file limit): lower them`,
    { total, shares },
  ]),
  environmentShadowsRoute: define('RFT_ERR_ENVIRONMENT_SHADOWS_ROUTE', 500, (name: string, path: string, owner: string) => [
    `environment "${name}" cannot be served: its path ${path} is taken by ${owner}'s routes (rename the environment's folder or its job.json name)`,
    { name, path, owner },
  ]),
  unknownEnvironment: define('RFT_ERR_UNKNOWN_ENVIRONMENT', 404, (name: string, known: string[]) => [
    `no environment named "${name}" (known: ${known.join(', ') || 'none'})`,
    { name, known },
  ]),
  nemoGymSession: define('RFT_ERR_NEMO_GYM_SESSION', 400, (why: string) => [
    `${why}: call POST /seed_session first and send the cookie it sets`,
  ]),
  // A cookie this process does not know: a restart (or the TTL) ended its session, a failure of ours, so 5xx.
  nemoGymSessionLost: define('RFT_ERR_NEMO_GYM_SESSION_LOST', 503, () => [
    'this session is not live here (the server restarted, or it outlived the sandbox TTL): rerun the rollout',
  ]),
  nemoGymNotATool: define('RFT_ERR_NEMO_GYM_NOT_A_TOOL', 422, (name: string) => [
    `"${name}" is not one of this rollout's tools`,
    { tool: name },
  ]),
  nemoGymRolloutLost: define('RFT_ERR_NEMO_GYM_ROLLOUT_LOST', 503, (cause: string) => [
    `a tool call of this rollout failed on the server's side (${cause}): its episode is not the model's, rerun the rollout`,
    { cause },
  ]),
  orsShadowsRoute: define('RFT_ERR_ORS_SHADOWS_ROUTE', 500, (name: string, request: string) => [
    `environment "${name}" would be served by the ORS door at /${name}/..., but another route of the server takes ${request}: rename its folder, or set RFT_ORS=0`,
    { name, request },
  ]),
  orsSession: define('RFT_ERR_ORS_SESSION', 400, (why: string) => [`${why}: POST /create_session, then /create with its X-Session-ID`]),
  // A session id this process does not hold: a restart (or the idle reaper) ended it, a failure of ours, so 5xx.
  orsSessionLost: define('RFT_ERR_ORS_SESSION_LOST', 503, () => [
    'this session is not live here (the server restarted, or it was idle past RFT_ORS_IDLE_MS): start another',
  ]),
  // A call whose run failed on our side, asked for again by its task_id: 503, and the next reconnect runs it.
  orsCallFailed: define('RFT_ERR_ORS_CALL_FAILED', 503, (cause: string) => [
    `the call failed on the server's side (${cause}); it was not run or charged: reconnect with the same task_id`,
    { cause },
  ]),
  // OpenEnv's client raises every `error` frame; the model never reads them (docs/openenv.md).
  openenvNoEpisode: define('RFT_ERR_OPENENV_NO_EPISODE', 409, () => ['no episode on this socket: send a reset first']),
  openenvRolloutLost: define('RFT_ERR_OPENENV_ROLLOUT_LOST', 503, (cause: string) => [
    `a step of this episode failed on the server's side (${cause}): its episode is not the model's, reset and run it again`,
    { cause },
  ]),
  // A session of OpenEnv's HTTP /mcp (openenv/session/create): answered as OpenEnv answers an unknown one (JSON-RPC -32602).
  openenvSessionUnknown: define('RFT_ERR_OPENENV_SESSION_UNKNOWN', 404, (id: string) => [
    `Unknown session_id: ${id} (never created here, or it ended idle past RFT_OPENENV_IDLE_MS): call openenv/session/create`,
    { session_id: id },
  ]),
  openenvSessionClosed: define('RFT_ERR_OPENENV_SESSION_CLOSED', 409, (id: string) => [
    `Session ${id} is closed (openenv/session/close): call openenv/session/create for another episode`,
    { session_id: id },
  ]),
  // Harbor tasks (src/harbor/task.ts, dataset.ts): a folder that is not a task this server can run, and
  // why, by kind. Reported per task (the boot log, `harbor check`, `dataset convert`), never dropped silently.
  harborTaskToml: define('RFT_ERR_HARBOR_TASK_TOML', 400, (dir: string, why: string) => [`${dir}: task.toml: ${why}`, { dir }]),
  harborTaskFiles: define('RFT_ERR_HARBOR_TASK_FILES', 400, (dir: string, why: string) => [`${dir}: ${why}`, { dir }]),
  harborTaskCompose: define('RFT_ERR_HARBOR_TASK_COMPOSE', 400, (dir: string, why: string) => [
    `${dir}: environment/docker-compose.yaml: ${why} (one sandbox per rollout: only a compose file whose one service is "main" runs here)`,
    { dir },
  ]),
  harborTaskMultiStep: define('RFT_ERR_HARBOR_TASK_MULTI_STEP', 400, (dir: string, steps: number) => [
    `${dir}: a multi-step task ([[steps]], ${steps} of them) is not supported: one instruction and one verify step per rollout`,
    { dir, steps },
  ]),
  harborTaskUnsupported: define('RFT_ERR_HARBOR_TASK_UNSUPPORTED', 400, (dir: string, why: string) => [`${dir}: ${why}`, { dir }]),
  harborTaskRemote: define('RFT_ERR_HARBOR_TASK_REMOTE', 400, (where: string, why: string) => [
    `${where}: ${why} (only tasks on this machine are loaded: fetch the dataset and name its folder)`,
    { where },
  ]),
  harborTaskDuplicate: define('RFT_ERR_HARBOR_TASK_DUPLICATE', 400, (dir: string, name: string, first: string) => [
    `${dir}: another task named "${name}" was found first (${first}): a task's folder name is its row id and must be unique in its environment`,
    { dir, name, first },
  ]),
  environmentLoad: define('RFT_ERR_ENVIRONMENT_LOAD', 500, (dir: string, why: string) => [`environment ${dir}: ${why}`, { dir }]),
  // The project's job.json names a tool or grader its tools/ and graders/ no longer have (replaced, renamed):
  // every door that knows environments would serve none of it, so the boot stops and names the file.
  jobUnits: define('RFT_ERR_JOB_UNITS', 500, (file: string, missing: { tools: string[]; graders: string[] }, loaded: { tools: string[]; graders: string[] }) => [
    `${file} names ${[...missing.tools.map((t) => `tool "${t}"`), ...missing.graders.map((g) => `grader "${g}"`)].join(' and ')}, which this server did not load ` +
      `(its tools: ${loaded.tools.join(', ') || 'none'}; its graders: ${loaded.graders.join(', ') || 'none'}): name the project's units in method.reinforcement.tools and .grader of ${file}, ` +
      'or remove them from it to serve every tool and the grader the server loaded',
    { file, missing_tools: missing.tools, missing_graders: missing.graders },
  ]),

  // authentication
  authMissing: define('RFT_ERR_AUTH_MISSING', 401, (expected: string) => [`missing credentials: send ${expected}`]),
  authInvalid: define('RFT_ERR_AUTH_INVALID', 401, () => ['invalid API key']),
  signatureInvalid: define('RFT_ERR_SIGNATURE_INVALID', 401, (why: string) => [`invalid webhook signature: ${why}`]),
  signatureTimestamp: define('RFT_ERR_SIGNATURE_TIMESTAMP', 401, (why: string) => [`webhook timestamp ${why}`]),
  signatureReplay: define('RFT_ERR_SIGNATURE_REPLAY', 401, (id: string) => [`webhook-id ${id} was already used`]),
  authRateLimited: define('RFT_ERR_AUTH_RATE_LIMITED', 429, (retryAfterS: number) => [
    `too many failed authentications from this address, retry in ${retryAfterS} s`,
    { retry_after_s: retryAfterS },
  ]),
  rateLimited: define('RFT_ERR_RATE_LIMITED', 429, (retryAfterS: number) => [
    `rate limit exceeded, retry in ${retryAfterS} s`,
    { retry_after_s: retryAfterS },
  ]),
  // The same refusals on the trainer's routes (tools, graders): a 4xx there is shown to the model
  // and trained on, a 5xx is retried, so a limit answers 503 with Retry-After.
  rateLimitedRetry: define('RFT_ERR_RATE_LIMITED_RETRY', 503, (retryAfterS: number, reason: 'requests' | 'auth_failures') => [
    reason === 'requests'
      ? `rate limit exceeded, retry in ${retryAfterS} s`
      : `too many failed authentications from this address, retry in ${retryAfterS} s`,
    { retry_after_s: retryAfterS, reason },
  ]),

  // request shape
  badRequest: define('RFT_ERR_BAD_REQUEST', 400, (msg: string, details?: Record<string, unknown>) => [msg, details]),
  badRunLabel: define('RFT_ERR_BAD_RUN_LABEL', 400, (where: string, why: string) => [
    `${where}: a run label is 1 to 64 printable ASCII characters, no leading or trailing space (${why})`,
    { where },
  ]),
  bodyTooLarge: define('RFT_ERR_BODY_TOO_LARGE', 413, (limit: number) => [
    `request body exceeds ${limit} bytes`,
    { limit_bytes: limit },
  ]),
  bodyTooDeep: define('RFT_ERR_BODY_TOO_DEEP', 400, (limit: number) => [
    `request body nests arrays and objects more than ${limit} levels deep`,
    { max_depth: limit },
  ]),
  unsupportedMediaType: define('RFT_ERR_UNSUPPORTED_MEDIA_TYPE', 415, (contentType: string | undefined) => [
    contentType === undefined
      ? 'request body without a content type: send "Content-Type: application/json"'
      : `content type "${contentType.slice(0, 100)}" is not supported: send "Content-Type: application/json"`,
  ]),
  uriTooLong: define('RFT_ERR_URI_TOO_LONG', 414, (max: number) => [
    `a path segment of the URL is longer than ${max} characters`,
    { max_length: max },
  ]),
  requestTimeout: define('RFT_ERR_REQUEST_TIMEOUT', 408, () => ['the request was not received in time']),
  headersTooLarge: define('RFT_ERR_HEADERS_TOO_LARGE', 431, () => ['request headers are too large']),
  malformedHttp: define('RFT_ERR_MALFORMED_HTTP', 400, () => ['malformed HTTP request']),
  shuttingDown: define('RFT_ERR_SHUTTING_DOWN', 503, () => ['the server is shutting down; retry']),
  unknownTool: define('RFT_ERR_UNKNOWN_TOOL', 404, (name: string, known: string[]) => [
    `unknown tool "${name}"; known tools: ${known.join(', ') || '(none)'}`,
    { tool: name, known_tools: known },
  ]),
  unknownGrader: define('RFT_ERR_UNKNOWN_GRADER', 404, (name: string, known: string[]) => [
    `unknown grader "${name}"; known graders: ${known.join(', ') || '(none)'}`,
    { grader: name, known_graders: known },
  ]),
  // A grader that reads the rollout's tool calls, asked for through a door whose rollouts carry none (the
  // reward door): graded there it would score an empty trajectory, a wrong reward trained on silently.
  graderReadsCalls: define('RFT_ERR_GRADER_READS_CALLS', 404, (name: string, door: string) => [
    `grader "${name}" reads the rollout's tool calls (readsCalls) and the ${door} door carries none: it is not served here`,
    { grader: name, door },
  ]),
  // Several graders and no RFT_DEFAULT_GRADER: which one POST /grade (or a job-config) means is the
  // user's choice, never a guess.
  noDefaultGrader: define('RFT_ERR_NO_DEFAULT_GRADER', 404, (known: string[]) => [
    known.length === 0
      ? 'no default grader: this server loaded no grader (RFT_GRADERS_DIR), so RFT_DEFAULT_GRADER has none to name'
      : `no default grader: set RFT_DEFAULT_GRADER to one of ${known.join(', ')}, or name it (POST /graders/<name>, GET /v1/job-config?grader=<name>)`,
    { known_graders: known, setting: 'RFT_DEFAULT_GRADER' },
  ]),
  notFound: define('RFT_ERR_NOT_FOUND', 404, (what: string) => [`${what} not found`]),
  notGraded: define('RFT_ERR_NOT_GRADED', 409, (traceId: string) => [
    `rollout ${traceId} was never graded, so there is no sample to re-score`,
    { trace_id: traceId },
  ]),
  // A call this retry found running elsewhere was un-begun there (a failure of ours): nothing is
  // recorded under its id any more, so the trainer's next retry runs it.
  callNotRun: define('RFT_ERR_CALL_NOT_RUN', 503, (callId: string) => [
    `call_id ${callId} failed on a server error before it completed and was not recorded; retry it`,
    { call_id: callId },
  ]),
  // A retry of a call a server restart (or a replica's death) cut while it ran: what it did is
  // unknown, so it is never run again nor shown to the model, and it was not charged. Every retry
  // answers this, so the trainer drops the rollout (a tool declared idempotent runs again instead).
  callInterrupted: define('RFT_ERR_CALL_INTERRUPTED', 503, (callId: string) => [
    `call_id ${callId} was cut by a server restart before it completed; it is not run again (what it did is unknown) ` +
      'and was not charged: this rollout cannot go on',
    { call_id: callId },
  ]),
  callConflict: define('RFT_ERR_CALL_CONFLICT', 409, (callId: string) => [
    `call_id ${callId} was already used in this rollout with different arguments or tool`,
    { call_id: callId },
  ]),

  // grading
  graderFailed: define('RFT_ERR_GRADER_FAILED', 500, (grader: string, why: string) => [
    `grader "${grader}" failed: ${why}`,
    { grader },
  ]),
  // A row without what the grader reads (its itemSchema) is the dataset's fault: never scored (a
  // false zero would be trained on), answered 5xx so the trainer drops the rollout.
  badRow: define('RFT_ERR_BAD_ROW', 500, (grader: string, problems: string) => [
    `the row does not match grader "${grader}"'s itemSchema (${problems}): not graded; check the dataset with \`rft-endpoints dataset check\``,
    { grader },
  ]),
  // The same row refused where its rollout starts (a NeMo Gym seed, an ORS /create, an OpenEnv reset): the
  // protocol's bad-input reply, before anything runs or is recorded (docs/door-failures.md).
  rowUnreadable: define('RFT_ERR_ROW_UNREADABLE', 400, (grader: string, problems: string) => [
    `the row does not match grader "${grader}"'s itemSchema (${problems}): refused before its rollout starts; check the dataset with \`rft-endpoints dataset check\``,
    { grader },
  ]),
  // A row (or a label standing for one) nested deeper than RFT_MAX_JSON_DEPTH, on a door whose body
  // the main listener's depth check does not see: the trainer's input, a 400 as there.
  rowTooDeep: define('RFT_ERR_ROW_TOO_DEEP', 400, (where: string, limit: number) => [
    `${where} nests arrays and objects more than ${limit} levels deep (RFT_MAX_JSON_DEPTH)`,
    { where, max_depth: limit },
  ]),
  graderBadScore: define('RFT_ERR_GRADER_BAD_SCORE', 500, (grader: string, why: string) => [
    `grader "${grader}" returned an invalid score: ${why}`,
    { grader },
  ]),
  graderConfig: define('RFT_ERR_GRADER_CONFIG', 400, (path: string, msg: string) => [
    `${path ? path + ': ' : ''}${msg}`,
    { path },
  ]),
  graderUnsupported: define('RFT_ERR_GRADER_UNSUPPORTED', 400, (type: string, why: string) => [
    `grader type "${type}" is not supported: ${why}`,
    { type },
  ]),
  templatePath: define('RFT_ERR_TEMPLATE_PATH', 400, (path: string) => [
    `template path {{${path}}} does not resolve`,
    { path },
  ]),
  formula: define('RFT_ERR_FORMULA', 400, (msg: string, position: number) => [
    `calculate_output at position ${position}: ${msg}`,
    { position },
  ]),
  modelGrader: define('RFT_ERR_MODEL_GRADER', 502, (kind: string, msg: string) => [
    `model grader ${kind}: ${msg}`,
    { kind },
  ]),
  gradingArgument: define('RFT_ERR_GRADING_ARGUMENT', 500, (fn: string, msg: string) => [
    `${fn}: ${msg}`,
    { fn },
  ]),
  gradingTooLarge: define('RFT_ERR_GRADING_TOO_LARGE', 413, (metric: string, why: string) => [
    `${metric}: texts too large to compare (${why})`,
    { metric },
  ]),

  // MCP (src/mcp): serving /mcp and bridging configured MCP servers
  mcpConfig: define('RFT_ERR_MCP_CONFIG', 500, (file: string, why: string) => [`${file}: ${why}`, { file }]),
  mcpStart: define('RFT_ERR_MCP_START', 503, (server: string, why: string) => [
    `MCP server "${server}" could not start: ${why}`,
    { server },
  ]),
  // Starting what a tool runs on (its MCP server) is ours: its time is not the tool's, and past its
  // own bound the call is not run (503, not recorded, not charged) rather than timed out on the model.
  toolStartTimeout: define('RFT_ERR_TOOL_START_TIMEOUT', 503, (what: string, boundMs: number) => [
    `${what} did not start within ${boundMs} ms; the call was not run and not charged: retry it`,
    { bound_ms: boundMs },
  ]),
  noRollout: define('RFT_ERR_NO_ROLLOUT', 400, (tool: string) => [
    `tool "${tool}" keeps state per rollout, and this call names none: send the header "x-rft-trace-id: <rollout id>" ` +
      'with every call of the rollout (or call it within one MCP session), then call it again',
    { tool },
  ]),

  // sandboxes
  sandboxUnavailable: define('RFT_ERR_SANDBOX_UNAVAILABLE', 503, (msg: string) => [msg]),
  sandboxQueueTimeout: define('RFT_ERR_SANDBOX_QUEUE_TIMEOUT', 503, (waitedMs: number) => [
    `no sandbox became free within ${waitedMs} ms`,
    { waited_ms: waitedMs },
  ]),
  memoryBudget: define('RFT_ERR_MEMORY_BUDGET', 503, (neededMb: number, heldMb: number, budgetMb: number, waitedMs: number) => [
    `no room for a sandbox and what its rollout starts (${neededMb} MB) within ${waitedMs} ms: ${heldMb} MB of the ${budgetMb} MB memory budget (RFT_MEMORY_BUDGET_MB) are held`,
    { needed_mb: neededMb, held_mb: heldMb, budget_mb: budgetMb, waited_ms: waitedMs },
  ]),
  sandboxFailed: define('RFT_ERR_SANDBOX', 500, (msg: string) => [msg]),
  sandboxTemplate: define('RFT_ERR_SANDBOX_TEMPLATE', 400, (template: string, why: string) => [
    `sandbox template "${template}": ${why}`,
    { template },
  ]),
  // A Harbor task's sandbox (src/harbor/sandbox-spec.ts, drivers/docker/images.ts). A row naming a task this
  // server does not serve is the row's (400 at any step: ROW_CODES in src/doors/core.ts); a task whose image
  // cannot be had (missing, its build failed or ran out of time) is not the model's doing: ours, 5xx, so the
  // rollout is discarded, never scored (docs/door-failures.md); `harbor check` finds such tasks before training.
  harborUnknownTask: define('RFT_ERR_HARBOR_UNKNOWN_TASK', 400, (ref: string) => [
    `the row names Harbor task "${ref}" (sandbox.harbor), which this server does not serve: check the environment's task folders`,
    { task: ref },
  ]),
  harborImageMissing: define('RFT_ERR_HARBOR_IMAGE_MISSING', 500, (image: string, engine: string) => [
    `the task's image ${image} is not on Docker engine "${engine}" (images are never pulled: load or build it there)`,
    { image, engine },
  ]),
  harborImageBuild: define('RFT_ERR_HARBOR_IMAGE_BUILD', 500, (image: string, why: string) => [
    `the task's environment/Dockerfile did not build (${image}): ${why}`,
    { image },
  ]),
  harborImageBuildTimeout: define('RFT_ERR_HARBOR_IMAGE_BUILD_TIMEOUT', 504, (image: string, seconds: number) => [
    `the task's environment/Dockerfile did not build within its build_timeout_sec (${seconds} s): ${image}`,
    { image, build_timeout_sec: seconds },
  ]),
  processDriverNotAllowed: define('RFT_ERR_SANDBOX_PROCESS_DRIVER', 500, (host: string) => [
    `the process sandbox driver isolates nothing and is refused while listening on ${host}: give the server an isolating driver ` +
      `(RFT_SANDBOX=docker with the engine's socket mounted, or bwrap where user namespaces are allowed: docs/deploy.md), ` +
      `listen on loopback, or set RFT_SANDBOX=none if no tool needs a sandbox`,
    { host },
  ]),
  dockerSocketDenied: define('RFT_ERR_DOCKER_SOCKET_DENIED', 500, (socket: string, group: string | undefined) => [
    `this process may not open the Docker socket ${socket} (EACCES)` +
      (group !== undefined
        ? `: it belongs to group "${group}"; add the server's user to it (sudo usermod -aG ${group} <user>, then log in again; in a container: --group-add with the socket's gid)`
        : ': give the server\'s user access to it (the group that owns it)'),
    { socket, ...(group !== undefined ? { group } : {}) },
  ]),
  dockerRuntimeMissing: define('RFT_ERR_DOCKER_RUNTIME', 500, (runtime: string, engine: string, known: string[]) => [
    `RFT_DOCKER_RUNTIME=${runtime}, but Docker engine "${engine}" has no such runtime (it has: ${known.join(', ') || 'none'}): ` +
      `register it with the engine (for gVisor: install runsc and add it to "runtimes" in the engine's daemon.json), or unset RFT_DOCKER_RUNTIME`,
    { runtime, engine, known_runtimes: known },
  ]),
  sandboxClosed: define('RFT_ERR_SANDBOX_CLOSED', 503, () => ['the sandbox manager is shut down']),
  // The engine's address stays in the server's log: callers (and the model) only learn that it is down.
  // Also a rollout's sandbox made by an earlier process of this server (a restart: its workspace
  // is gone, and a new, empty one would be worked on or graded as if it were the rollout's).
  sandboxLost: define('RFT_ERR_SANDBOX_LOST', 503, (why = 'its container stopped, and its workspace with it') => [
    `this rollout's sandbox was lost (${why}); the rollout cannot continue`,
  ]),
  // Capacity, ours: a graded rollout's sandbox made room for a new rollout at the cap (docs/sandbox.md).
  sandboxReclaimed: define('RFT_ERR_SANDBOX_RECLAIMED', 503, () => [
    "this rollout was graded and its sandbox was then reclaimed to admit a new rollout (the server was at its sandbox cap); the rollout's workspace is gone",
  ]),
  // The rollout's own commands took its sandbox down (on gVisor: they exhausted its memory and the
  // engine killed the sandbox's kernel with them, or a fork bomb made that kernel fail): the model's doing, an observation it reads and is
  // charged for, like a command that failed; every later sandbox call of the rollout answers it too.
  sandboxEndedByRollout: define('RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT', 410, () => [
    "this rollout's commands took its sandbox down (they exhausted its memory or its processes); its workspace is gone " +
      'and no further command or file operation can run. Give your final answer with what you have.',
  ]),
  // The model cannot cause it: the supervisor and a sandbox's holder are out of its reach (docs/sandbox.md).
  sandboxInterrupted: define('RFT_ERR_SANDBOX_INTERRUPTED', 503, () => [
    "the command was ended by a failure of the server's sandbox supervisor, not by anything it did; the workspace is kept, retry",
  ]),
  sandboxEngineDown: define('RFT_ERR_SANDBOX_ENGINE_DOWN', 503, () => [
    "the Docker engine that holds this rollout's sandbox is not answering; retry later",
  ]),
  // A file operation the workspace's own state refused (full, too long a name, no permission the
  // rollout's commands took away, a FIFO): the model's doing, shown to it, never a 5xx.
  fileRefused: define('RFT_ERR_FILE_REFUSED', 400, (path: string, why: string) => [`"${path}": ${why}`, { path }]),
  pathEscape: define('RFT_ERR_PATH_ESCAPE', 400, (path: string) => [`path "${path}" is outside the workspace`, { path }]),
  hiddenPath: define('RFT_ERR_HIDDEN_PATH', 400, (path: string) => [
    `path "${path}" belongs to the task's hidden grading files, which are not part of the workspace`,
    { path },
  ]),

  // The SandboxFusion door (src/doors/sandbox-fusion): verl retries 504 alone, and turns any other
  // failure into a failed test case, so a run we could not carry out (no sandbox slot in time, the
  // sandbox or the record failing) is a 504 naming its cause; the program's own failures are 200s.
  runCodeUnavailable: define('RFT_ERR_RUN_CODE_UNAVAILABLE', 504, (cause: string, why: string) => [
    `the program was not run (${why}): retry`,
    { cause },
  ]),
  // More output than the door returns whole: not a reply SandboxFusion would give, so never one verl could score.
  runCodeOutputTooLarge: define('RFT_ERR_RUN_CODE_OUTPUT_TOO_LARGE', 504, (limit: number) => [
    `the program printed more than ${limit} bytes on stdout or stderr, more than this server returns whole`,
    { limit_bytes: limit },
  ]),
  runCodeLanguage: define('RFT_ERR_RUN_CODE_LANGUAGE', 400, (language: string, supported: string[]) => [
    `language "${language}" is not run by this server (it runs: ${supported.join(', ')})`,
    { language, supported },
  ]),

  // local CLI (rollout, replay, export/import, regrade, report): statuses say whose fault it is
  cliUsage: define('RFT_ERR_CLI_USAGE', 400, (msg: string) => [msg]),
  dataset: define('RFT_ERR_DATASET', 400, (file: string, line: number, why: string) => [
    `${file}:${line}: ${why}`,
    { file, line },
  ]),
  serverReply: define('RFT_ERR_SERVER_REPLY', 502, (what: string, status: number, body: string) => [
    `${what}: server answered ${status}: ${body.slice(0, 500)}`,
    { status },
  ]),
  modelApi: define('RFT_ERR_MODEL_API', 502, (api: string, msg: string) => [`model (${api} API): ${msg}`, { api }]),
  modelReplyTooLarge: define('RFT_ERR_MODEL_REPLY_TOO_LARGE', 502, (limit: number) => [
    `the model endpoint's reply exceeds ${limit} bytes (--max-reply-bytes): the request was aborted there`,
    { limit_bytes: limit },
  ]),
  modelConfig: define('RFT_ERR_MODEL_CONFIG', 400, () => [
    'no model endpoint: pass --base-url http://HOST/v1 (any OpenAI-compatible server) or set OPENAI_BASE_URL, or set OPENAI_API_KEY for the OpenAI API',
  ]),
  modelScript: define('RFT_ERR_MODEL_SCRIPT', 400, (file: string, line: number, why: string) => [
    `${file}${line > 0 ? `:${line}` : ''}: ${why}`,
    { file, line },
  ]),
  // `option`: where the address came from, so the message names the option to fix (--door-url for a door's listener).
  serverUnreachable: define('RFT_ERR_SERVER_UNREACHABLE', 503, (url: string, why: string, option = '--server URL or RFT_SERVER') => [
    `cannot reach the rft-endpoints server at ${url} (${why}): is it running? (${option})`,
    { url },
  ]),
  serverTls: define('RFT_ERR_SERVER_TLS', 503, (url: string, tlsCode: string, hint: string) => [
    `cannot reach the rft-endpoints server at ${url} over TLS (${tlsCode}): ${hint}`,
    { url, tls_code: tlsCode },
  ]),
  serverAuth: define('RFT_ERR_SERVER_AUTH', 401, (url: string, code: string) => [
    `the server at ${url} refused the credential (${code}): pass --key (RFT_API_KEY) or --signing-secret (RFT_SIGNING_SECRET) as configured on the server`,
    { url, server_code: code },
  ]),
  file: define('RFT_ERR_FILE', 400, (path: string, why: string) => [`${path}: ${why}`, { path }]),
  portInUse: define('RFT_ERR_PORT_IN_USE', 500, (host: string, port: number) => [
    `${host}:${port} is already in use by another process: stop it, or choose another port (--port or PORT)`,
    { host, port },
  ]),
  initTarget: define('RFT_ERR_INIT_TARGET', 400, (dir: string, why: string) => [`cannot create a project in ${dir}: ${why}`, { dir }]),
  allDiscarded: define('RFT_ERR_ALL_DISCARDED', 502, (n: number, first: string, retry: string) => [
    `all ${n} rollouts were discarded (first: ${first}); fix the cause, then run them again: ${retry}`,
    { discarded: n },
  ]),
  rolloutDiscarded: define('RFT_ERR_ROLLOUT_DISCARDED', 502, (why: string) => [`rollout discarded: ${why}`]),

  // coding tools (apply_patch, file tools): tool-level failures the model reads and can fix
  patchInvalid: define('RFT_ERR_PATCH_INVALID', 400, (line: number, msg: string) => [
    `invalid patch at line ${line}: ${msg}`,
    { line },
  ]),
  patchConflict: define('RFT_ERR_PATCH_CONFLICT', 400, (file: string, hunk: number, msg: string) => [
    `${file}: hunk ${hunk}: ${msg}`,
    { file, hunk },
  ]),
  toolInput: define('RFT_ERR_TOOL_INPUT', 400, (msg: string, details?: Record<string, unknown>) => [msg, details]),

  // finqa document tools (search_docs, list_docs, read_doc)
  docNotFound: define('RFT_ERR_DOC_NOT_FOUND', 400, (docId: string, closest: string[]) => [
    `no document "${docId}"` +
      (closest.length ? `; did you mean ${closest.map((c) => `"${c}"`).join(', ')}?` : '') +
      ' Use list_docs to see every doc_id.',
    { doc_id: docId, closest },
  ]),
  corpus: define('RFT_ERR_CORPUS', 500, (dir: string, why: string) => [`document corpus ${dir}: ${why}`, { dir }]),

  // storage
  store: define('RFT_ERR_STORE', 503, (msg: string) => [`could not record: ${msg}`]),
  storeConnect: define('RFT_ERR_STORE_CONNECT', 500, (where: string, why: string) => [
    `cannot open the store at ${where}: ${why}`,
    { where },
  ]),
  storeInUse: define('RFT_ERR_STORE_IN_USE', 500, (path: string) => [
    `${path} is in use by another rft-endpoints process: one server per SQLite data dir (RFT_STORE=postgres for several replicas)`,
    { path },
  ]),
  internal: define('RFT_ERR_INTERNAL', 500, (msg: string) => [msg]),
} as const;

export function isRftError(e: unknown): e is RftError {
  return e instanceof RftError;
}
