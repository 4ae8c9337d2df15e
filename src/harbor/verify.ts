// Harbor's verify step (../shared/docs/harbor-tasks.md sections 3, 3.1 and 6), hardened: what the
// rollout left cannot forge the reward. When the episode ends:
//   1. every process of the rollout is killed (a daemon left to rewrite the reward dies first);
//   2. /logs/verifier and /tests are removed, never followed (a link over /logs, /logs/verifier or
//      /tests is removed itself, nothing is written through it), and made again, the verifier user's;
//   3. tests/ is uploaded (it was never in the container before: the agent could not read it);
//   4. `bash /tests/test.sh` runs as [verifier].user in the workdir, with the container's env plus
//      [verifier].env (`${VAR}` from an allow-list, never the server's environment), bounded by
//      [verifier].timeout_sec; then everything it left is killed too;
//   5. the reward is read: reward.json (an object of name -> number: the score is its `reward`, else
//      the mean of its values; the other names are subscores), else reward.txt (a float, kept as is).
// Harbor's failure kinds (no file, an empty or unparsable one, the verifier over its time) and what
// the rollout did to its container (a full disk, a deleted bash) are the model's 0; a sandbox lost,
// an engine gone, an image that cannot be had are thrown (coded 5xx: ours, the rollout is not scored).
// Separate mode (section 3.1): the verifier runs in a fresh container of [verifier.environment] (its
// image holds /tests itself) or of the task's environment (tests uploaded), with the task's
// artifacts copied in from the agent's container at their paths.
import { join } from 'node:path';
import { errors, isRftError } from '../errors.js';
import type { FsChange, Sandbox, SandboxAdmin, SandboxImage } from '../sandbox/types.js';
import { allowedHostVars, harborVerifierImage, resolveTemplates } from './sandbox-spec.js';
import type { HarborTask, HarborVerdict } from './types.js';

export interface VerifyOptions {
  signal?: AbortSignal;
  /** Separate mode: a fresh sandbox of the verifier's image (the provider's createEphemeral); destroyed here. */
  freshSandbox?: (image: SandboxImage) => Promise<Sandbox>;
  /** Host variables `${VAR}` templates of [verifier].env may read (default: allowedHostVars()). */
  templateVars?: Readonly<Record<string, string | undefined>>;
}

/** The most of a reward file read, and of test.sh's output kept in the verdict's log. */
export const REWARD_MAX_BYTES = 64 * 1024;
export const LOG_MAX_BYTES = 64 * 1024;
/** The most of the artifacts copied into a separate verifier. */
const ARTIFACTS_MAX_BYTES = 256 * 1024 * 1024;

/**
 * Removes /logs/verifier and /tests and makes them again, owned by $1:$2. `rm -rf` on a link removes
 * the link; a /logs that is not a real directory (a link, a file) is removed first, so nothing below
 * is reached through it. Run after every process of the rollout is dead: nothing races it.
 * $3 = keep-tests: /tests is the verifier image's own (separate mode), only /logs/verifier is made.
 */
const RESET = `set -e
if [ -L /logs ] || { [ -e /logs ] && [ ! -d /logs ]; }; then rm -f /logs; fi
mkdir -p /logs
rm -rf /logs/verifier
mkdir -m 0755 /logs/verifier
chown "$1:$2" /logs/verifier
if [ "$3" != keep-tests ]; then
  rm -rf /tests
  mkdir -m 0755 /tests
  chown "$1:$2" /tests
fi`;

/**
 * Reads the reward file: its name on the first line, then at most $1 bytes of it. reward.json first,
 * else reward.txt (Harbor's order). Exit 2: neither exists; 3: it is not a regular file (a link is not
 * followed). cd, not a path: /logs/verifier is the one RESET made (only test.sh ran since).
 */
const READ_REWARD = `cd /logs/verifier 2>/dev/null || exit 2
if [ -e reward.json ] || [ -L reward.json ]; then f=reward.json
elif [ -e reward.txt ] || [ -L reward.txt ]; then f=reward.txt
else exit 2; fi
printf '%s\\n' "$f"
if [ -L "$f" ] || [ ! -f "$f" ]; then exit 3; fi
exec head -c "$1" -- "$f"`;

/**
 * The programs the verify step runs by name (its shell steps, \`bash /tests/test.sh\`, the reward's
 * \`head\`, the upload's \`tar\`, \`id\`), and the loader and libraries they load (Debian's and
 * musl's names). A rollout as root can replace any of them: a \`bash\` that writes 1 to reward.txt
 * scored 1 on a task whose tests write 0 (runc and gVisor alike). A change to one, however and whenever
 * made, stays in the engine's diff of the container, which no program of the container reads.
 */
const VERIFY_PROGRAMS = new Set(['sh', 'bash', 'dash', 'ash', 'busybox', 'rm', 'mkdir', 'chown', 'tar', 'head', 'id']);
const VERIFY_LIBRARIES = /^(?:ld-linux[\w.-]*\.so[\d.]*|ld-musl[\w.-]*|libc\.so[\d.]*|libc\.musl[\w.-]*|libtinfo\.so[\d.]*|libselinux\.so[\d.]*|libpcre2-8\.so[\d.]*|libacl\.so[\d.]*)$/;
/**
 * The loader's preload list. (Not its cache or search path: apt's trigger rewrites the cache with every
 * library a task installs; a library of the names above added anywhere is caught by its name.)
 */
const LOADER_PRELOAD = '/etc/ld.so.preload';

/**
 * What of `changes` touches a program the verify step runs (added, changed or deleted in a \`bin\` or
 * \`sbin\` directory: a new one can come first on the PATH), a library it loads (anywhere: the loader's
 * search can be pointed at it), or the loader's preload list; as \`kind path\` lines.
 */
export function verifierToolChanges(changes: FsChange[]): string[] {
  return changes
    .filter(({ path }) => {
      const parts = path.split('/');
      const name = parts[parts.length - 1] ?? '';
      const dir = parts[parts.length - 2] ?? '';
      return path === LOADER_PRELOAD || ((dir === 'bin' || dir === 'sbin') && VERIFY_PROGRAMS.has(name)) || VERIFY_LIBRARIES.test(name);
    })
    .map((c) => `${c.kind} ${c.path}`);
}

/** Python's float() syntax (reward.txt), without its nan/inf: a non-finite reward cannot be a score. */
const FLOAT = /^[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;

/** Harbor's coercion of one reward.json value (pydantic float|int): a number, a numeric string, a boolean. */
function rewardValue(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && FLOAT.test(v.trim())) {
    const n = Number(v.trim().replace(/_/g, ''));
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

type Parsed = { ok: true; score: number; subscores: Record<string, number> } | { ok: false; reason: 'RewardFileEmpty' | 'VerifierOutputParse' };

/** A reward file's text by Harbor's rule (section 3, step 8). */
export function parseReward(file: 'reward.json' | 'reward.txt', text: string): Parsed {
  const t = text.trim();
  if (t === '') return { ok: false, reason: 'RewardFileEmpty' };
  if (file === 'reward.txt') {
    if (!FLOAT.test(t)) return { ok: false, reason: 'VerifierOutputParse' };
    const n = Number(t.replace(/_/g, ''));
    return Number.isFinite(n) ? { ok: true, score: n, subscores: {} } : { ok: false, reason: 'VerifierOutputParse' };
  }
  let obj: unknown;
  try {
    obj = JSON.parse(t);
  } catch {
    return { ok: false, reason: 'VerifierOutputParse' };
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return { ok: false, reason: 'VerifierOutputParse' };
  const values: Record<string, number> = {};
  for (const [k, v] of Object.entries(obj)) {
    const n = rewardValue(v);
    if (n === undefined) return { ok: false, reason: 'VerifierOutputParse' };
    values[k] = n;
  }
  const names = Object.keys(values);
  if (names.length === 0) return { ok: false, reason: 'VerifierOutputParse' };
  const { reward, ...subscores } = values;
  const score = reward ?? names.reduce((a, k) => a + (values[k] as number), 0) / names.length;
  return { ok: true, score, subscores };
}

function adminOf(sb: Sandbox): SandboxAdmin {
  if (!sb.admin) throw errors.sandboxFailed(`sandbox ${sb.id} (${sb.driver}) runs no task image: Harbor's verify step needs one (RFT_SANDBOX=docker)`);
  return sb.admin;
}

function clip(s: string): string {
  return s.length > LOG_MAX_BYTES ? `${s.slice(0, LOG_MAX_BYTES)}\n[... cut]` : s;
}

/**
 * Harbor's verify step on the rollout's sandbox (its task image's container). Resolves with the
 * verdict; throws a coded 5xx error when the sandbox or its engine failed (ours).
 */
export async function verifyHarborTask(sandbox: Sandbox, task: HarborTask, opts: VerifyOptions = {}): Promise<HarborVerdict> {
  try {
    return await verifyStep(sandbox, task, opts);
  } catch (e) {
    // The container is gone: the sandbox's own classification says whose doing (a gVisor sandbox whose
    // kernel the rollout's memory hog or fork bomb took down is the rollout's: RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT).
    if (isRftError(e) && e.code === errors.sandboxLost.code && (await endedByRollout(sandbox))) {
      return { kind: 'model', score: 0, reason: 'RewardFileNotFound', log: "the rollout's own commands took its sandbox down (its memory or process limit): there was nothing left to grade" };
    }
    // An engine that stopped answering mid-step (an uncoded error) is ours too, coded.
    if (isRftError(e)) throw e;
    throw errors.sandboxFailed(`Harbor's verify step of task ${task.name} failed on the server's side: ${(e as Error).message}`);
  }
}

/** Whether the rollout's sandbox answers that its own commands ended it (a call on it: the driver classifies). */
async function endedByRollout(sandbox: Sandbox): Promise<boolean> {
  const why = await sandbox.exec(['true']).then(
    () => undefined,
    (x: unknown) => x,
  );
  return isRftError(why) && why.code === errors.sandboxEndedByRollout.code;
}

async function verifyStep(sandbox: Sandbox, task: HarborTask, opts: VerifyOptions): Promise<HarborVerdict> {
  const agent = adminOf(sandbox);
  // The episode is over: nothing of the rollout runs on, in either mode.
  await agent.killAll();
  if (task.config.verifier.mode !== 'separate') return sandbox.hold(() => verifyIn(agent, task, opts, { uploadTests: true }));
  if (!opts.freshSandbox) throw errors.sandboxFailed(`task ${task.name} declares a separate verifier, and this grader was given no way to make its sandbox`);
  const declared = task.config.artifacts ?? [];
  const artifacts = await agent.pack(['/logs/artifacts', ...declared], ARTIFACTS_MAX_BYTES);
  const fresh = await opts.freshSandbox(harborVerifierImage(task));
  try {
    const admin = adminOf(fresh);
    const refused = await admin.unpack(artifacts);
    const log = refused === null ? '' : `artifacts not copied: ${refused}\n`;
    const verdict = await verifyIn(admin, task, opts, { uploadTests: task.config.verifier.environment === undefined });
    return { ...verdict, log: log + verdict.log };
  } finally {
    await fresh.destroy().catch(() => {});
  }
}

async function verifyIn(admin: SandboxAdmin, task: HarborTask, opts: VerifyOptions, o: { uploadTests: boolean }): Promise<HarborVerdict> {
  const v = task.config.verifier;
  const user = v.user === undefined ? undefined : String(v.user);
  const ids = await admin.ids(user);
  const quick = { cwd: '/', timeoutMs: 60_000, ...(opts.signal ? { signal: opts.signal } : {}) };
  // The rollout made the container's state: a reset or an upload it refuses (a full disk) is the model's 0.
  const reset = await admin.exec(['/bin/sh', '-c', RESET, 'rft-verify-reset', String(ids.uid), String(ids.gid), o.uploadTests ? '' : 'keep-tests'], quick);
  if (reset.exitCode !== 0) return { kind: 'model', score: 0, reason: 'RewardFileNotFound', log: `the verifier's folders could not be made: ${reset.stderr.slice(0, 500)}` };
  if (o.uploadTests) {
    const refused = await admin.upload(join(task.dir, 'tests'), '/tests', ids);
    if (refused !== null) return { kind: 'model', score: 0, reason: 'RewardFileNotFound', log: `tests/ could not be copied in: ${refused}` };
  }
  const env = resolveTemplates(v.env, opts.templateVars ?? allowedHostVars());
  const run = await admin.exec(['bash', '/tests/test.sh'], {
    cwd: admin.workdir,
    env,
    timeoutMs: Math.round(v.timeoutSec * 1000),
    maxOutputBytes: LOG_MAX_BYTES,
    ...(user !== undefined ? { user } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const log = clip(`${run.stdout}${run.stderr ? `\n[stderr]\n${run.stderr}` : ''}`);
  // What test.sh left (a server it started) cannot touch the file once it is read.
  await admin.killAll();
  // Every step above, and the read below, ran the container's own programs: were they the image's?
  const changes = await admin.changes();
  const touched = changes === null ? ["more changes to the container's files than can be checked"] : verifierToolChanges(changes);
  if (touched.length > 0) {
    const list = touched.slice(0, 20).join('\n') + (touched.length > 20 ? `\n... ${touched.length - 20} more` : '');
    return { kind: 'model', score: 0, reason: 'VerifierToolsChanged', log: clip(`${log}\nthe programs the verify step runs were changed in the container (by the rollout, or by what test.sh ran), so no reward it reads can be trusted:\n${list}`) };
  }
  if (run.timedOut) return { kind: 'model', score: 0, reason: 'VerifierTimeout', log };
  const read = await admin.exec(['/bin/sh', '-c', READ_REWARD, 'rft-read-reward', String(REWARD_MAX_BYTES)], { ...quick, maxOutputBytes: REWARD_MAX_BYTES + 64 });
  if (read.exitCode === 2) return { kind: 'model', score: 0, reason: 'RewardFileNotFound', log };
  const nl = read.stdout.indexOf('\n');
  const file = read.stdout.slice(0, nl) as 'reward.json' | 'reward.txt';
  if (read.exitCode === 3) return { kind: 'model', score: 0, reason: 'VerifierOutputParse', log: `${log}\n${file} is not a regular file` };
  if (read.exitCode !== 0 || nl < 0 || (file !== 'reward.json' && file !== 'reward.txt')) {
    return { kind: 'model', score: 0, reason: 'RewardFileNotFound', log: `${log}\nthe reward could not be read: ${read.stderr.slice(0, 300)}` };
  }
  const parsed = parseReward(file, read.stdout.slice(nl + 1));
  if (!parsed.ok) return { kind: 'model', score: 0, reason: parsed.reason, log };
  return { kind: 'scored', score: parsed.score, subscores: parsed.subscores, file, log };
}
