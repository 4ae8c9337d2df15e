// The ORS door (Open Reward Standard, docs/ors.md): at the root of the main listener, behind its keys
// (also read from ORS's X-API-Key), as openrewardstandard/python-sdk's client (src/ors/client/*) and the
// `openreward` SDK (TRL's OpenRewardSpec, SkyRL, ROLL: bare paths, X-Deployment) call it. It translates; the
// core (../core.ts) runs.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import { z } from 'zod';
import { errors, isRftError } from '../../errors.js';
import { canonicalJson } from '../../protocol/canonical.js';
import { keyHeaders } from '../../authentication/key-headers.js';
import type { DoorSessionRecord } from '../../store/types.js';
import type { Rollout } from '../core.js';
import { promptOf, rowAt, rowTools, splitName, splitsOf, taskSpec, taskSpecAddress, toolSpecs } from './catalog.js';
import { Sessions, type RowRef, type Session } from './sessions.js';
import { EventStream } from './sse.js';
import { endsEpisode, runCall, type CallResult } from './call.js';
import { stored } from '../session-record.js';
import { firstRunLabel, RUN_HEADER, RUN_PARAM } from '../../protocol/run-label.js';

export const ORS_DOOR = 'ors';

/** What a task_id stands for: its call's tool and canonical input (a reconnect with other ones is a conflict). */
const fingerprintOf = (tool: string, canonicalInput: string): string => `${tool}\0${canonicalInput}`;
/** Reruns of a call that keeps failing on our side, reconnect after reconnect, before its reconnects get 503. */
const MAX_CALL_FAILURES = 3;
/** Calls held by this replica at most (running, or failed on our side and awaiting their reconnect). */
const MAX_TASKS_HELD = 10_000;

/** A call running (or failed on our side) on this replica: a reconnect here joins it; its result is the ledger's. */
interface Task {
  result: Promise<string>;
  /** Set when the run failed on our side: the next reconnect runs it again (it was not recorded). */
  failed: Error | undefined;
  failures: number;
}

const createBody = z.union([
  z.looseObject({ split: z.string().min(1).max(64), index: z.number().int().min(0), env_name: z.string().min(1).max(128).nullish(), task_spec: z.null().optional() }),
  z.looseObject({ task_spec: taskSpecAddress, env_name: z.string().min(1).max(128).nullish() }),
]);
const callBody = z.object({ name: z.string().min(1).max(128), input: z.record(z.string(), z.unknown()), task_id: z.string().min(1).max(128).nullish() });
const splitBody = z.looseObject({ split: z.string().min(1).max(64) });
const taskBody = splitBody.extend({ index: z.number().int() });
const rangeBody = splitBody.extend({ start: z.number().int().nullish(), stop: z.number().int().nullish() });

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (!r.success) throw errors.badRequest(`malformed ORS request: ${r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`);
  return r.data;
}

/** Registers the door's routes (RFT_ORS) and refuses, when the server is ready, an environment a route of the server shadows. */
export async function registerOrsDoor(app: FastifyInstance): Promise<void> {
  const { config, core, environments, registry } = app.rft;
  if (!config.ors.enabled) return;
  const { submitTool, pingMs, idleMs } = config.ors;

  // Each /{env}/... route of the door, to ask the router at boot whether another route (a static first segment
  // such as /tools/:name, a wildcard such as /docs/*) takes a request meant for an environment.
  const envRoutes: { method: 'GET' | 'POST'; suffix: string }[] = [];
  app.addHook('onRoute', (r) => {
    const m = /^\/:env\/(\w+)$/.exec(r.url);
    if (m && (r.method === 'GET' || r.method === 'POST')) envRoutes.push({ method: r.method as 'GET' | 'POST', suffix: m[1]! });
  });
  app.addHook('onReady', async () => {
    for (const env of environments.list()) {
      for (const r of envRoutes) {
        const url = `/${encodeURIComponent(env.name)}/${r.suffix}`;
        // (the router's handler is Fastify's wrapper, not ours: the door's routes alone name their first segment env)
        if ((app.findRoute({ method: r.method, url })?.params as { env?: string } | undefined)?.env !== env.name) throw errors.orsShadowsRoute(env.name, `${r.method} ${url}`);
      }
      if (env.tools.includes(submitTool)) throw errors.config(`environment "${env.name}" has a tool named "${submitTool}", the ORS door's submit tool: set RFT_ORS_SUBMIT_TOOL to another name`);
    }
  });

  // Sessions are the record's: a restart (or another replica) serves them, so closing ends none (and grades
  // none: the core's rule leaves a session idle since before the next process served ungraded).
  const sessions = new Sessions(core, idleMs, ORS_DOOR, (r) => void expired(r));
  app.addHook('onClose', async () => sessions.close());

  async function endSession(traceId: string): Promise<void> {
    await core.end({ traceId }).catch((err: unknown) => app.log.warn({ err, trace_id: traceId }, 'ors: ending a session\'s rollout failed'));
  }

  /** A session unused for RFT_ORS_IDLE_MS, removed by this replica (its sweep, or its client's late end): ended by the core's rule, then its rollout. */
  async function expired(r: DoorSessionRecord): Promise<void> {
    try {
      const { state, rollout } = await sessions.expired(r);
      const g = rollout && (await core.endUnanswered(rollout, { by: 'idle', lastUsed: r.lastUsed }, { answered: state.finished, broken: state.broken === true }));
      app.log.info({ trace_id: r.traceId, idle_ms: idleMs, reward: g?.score ?? null }, g ? 'ors session idle: graded unanswered' : 'ors session idle: ended');
    } catch (err) {
      app.log.warn({ err, trace_id: r.traceId }, 'ors session idle: its episode could not be graded');
    }
    await endSession(r.traceId);
  }

  const sidOf = (req: FastifyRequest): string => {
    const sid = req.headers['x-session-id'];
    if (typeof sid !== 'string' || sid.trim() === '') throw errors.orsSession('no X-Session-ID header');
    return sid.trim();
  };
  const live = async (req: FastifyRequest): Promise<Session> => (await sessions.get(sidOf(req))) ?? (() => { throw errors.orsSessionLost(); })();

  /** Sessions whose rollout this replica is starting: concurrent first calls share one start. */
  const starting = new Map<string, Promise<Session>>();
  /** The session with its rollout, started when first needed under the environment its path names (or /create named). */
  async function rolloutOf(s: Session, env: string): Promise<Session & { rollout: Rollout }> {
    const ref = s.row;
    if (!ref) throw errors.orsSession('this session has no task yet');
    const other = (e: string | undefined) => e !== undefined && e !== env && errors.badRequest(`this session's task is of environment "${e}", not "${env}"`);
    const wrong = other(s.rollout?.environment ?? ref.env);
    if (wrong) throw wrong;
    if (s.rollout) return s as Session & { rollout: Rollout };
    let started = starting.get(s.sid);
    if (!started) {
      started = (async () => {
        const row = await rowAt(environments, env, ref.split, ref.index);
        const { messages: _m, tools: _t, ...item } = row;
        // Bound in the rollout's opening commit (one fsync, not two in a row). Were the opening to fail alone
        // (Postgres: two statements), the session's first call opens the rollout's record (the ledger's ensure).
        let bound: Session | undefined;
        await core.start({ traceId: s.sid, door: ORS_DOOR, row: item, tools: rowTools(row, environments.get(env)), environment: env, warmSandbox: true, run: ref.run }, async (r) => {
          bound = await sessions.bind(s, r);
        });
        return bound!;
      })();
      starting.set(s.sid, started);
      started.then(() => starting.delete(s.sid), () => starting.delete(s.sid));
    }
    const bound = await started;
    // (another replica may have started it first, under another environment)
    const lost = other(bound.rollout?.environment);
    if (lost) throw lost;
    return bound as Session & { rollout: Rollout };
  }

  const route: RouteShorthandOptions = { config: { trainer: true, keyHeader: keyHeaders(['X-API-Key'])[0]! } };

  app.get('/list_environments', route, async () => environments.list().map((e) => e.name));

  /**
   * The environment a request is for. On `/{env}/...` its path names it. On the bare paths (`/splits`, `/call`, ...:
   * the `openreward` SDK's requests when `environments.get(name)` is given no variant, as TRL's OpenRewardSpec, SkyRL
   * and ROLL call it) the environment `X-Deployment` names (the SDK's `name`, or `owner/name`'s last part), else
   * the session's own (its /create named one), else the only one. The SDK's reference server answers a bare path
   * with a 308 to its first environment; here an unnamed one among several is a 404 naming them.
   */
  function envOf(req: FastifyRequest, s?: Session): string {
    const param = (req.params as { env?: string } | undefined)?.env;
    if (param !== undefined) return param;
    const own = deploymentEnv(req) ?? s?.rollout?.environment ?? s?.row?.env;
    if (own !== undefined) return own;
    const all = environments.list();
    if (all.length === 1) return all[0]!.name;
    throw errors.unknownEnvironment(String(req.headers['x-deployment'] ?? ''), all.map((e) => e.name));
  }
  /** The environment X-Deployment names: the whole value or its last `/` part (the SDK sends `owner/name` for a platform's), if one is served. */
  function deploymentEnv(req: FastifyRequest): string | undefined {
    const deployment = deploymentOf(req);
    return [deployment, deployment.split('/').at(-1)!].find((n) => n !== '' && environments.list().some((e) => e.name === n));
  }
  const deploymentOf = (req: FastifyRequest): string => {
    const header = req.headers['x-deployment'];
    return typeof header === 'string' ? header.trim() : '';
  };
  /**
   * The run X-Deployment names: `<run>/<environment>` (the SDK's `owner/name`; a self-hosted server has no owners),
   * what a client that sends no header of its user's can label its episodes by (TRL's OpenRewardSpec: env_name="run/env").
   */
  function deploymentRun(req: FastifyRequest): string | undefined {
    const parts = deploymentOf(req).split('/');
    return parts.length === 2 && parts[0] !== '' && environments.list().some((e) => e.name === parts[1]) ? parts[0] : undefined;
  }
  /** A route of an environment, at `/{env}/{suffix}` and at the bare `/{suffix}` (envOf says which environment). */
  function envRoute(method: 'GET' | 'POST', suffix: string, handler: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>): void {
    for (const url of [`/:env/${suffix}`, `/${suffix}`]) app.route({ method, url, ...route, handler });
  }

  envRoute('GET', 'tools', async (req) => toolSpecs(registry, environments.get(envOf(req)).tools, submitTool));
  envRoute('GET', 'splits', async (req) => splitsOf(environments.get(envOf(req))));
  envRoute('POST', 'num_tasks', async (req) => {
    const { split } = parse(splitBody, req.body);
    const env = envOf(req);
    return { num_tasks: (await environments.rows(env, splitName(environments.get(env), split))).length };
  });
  envRoute('POST', 'task', async (req) => {
    const { split, index } = parse(taskBody, req.body);
    const env = envOf(req);
    return { task: taskSpec(split, index, await rowAt(environments, env, split, index)), env_name: env };
  });
  const allTasks = async (env: string, split: string) => (await environments.rows(env, splitName(environments.get(env), split))).map((row, i) => taskSpec(split, i, row));
  envRoute('POST', 'tasks', async (req) => {
    const { split } = parse(splitBody, req.body);
    const env = envOf(req);
    return { tasks: await allTasks(env, split), env_name: env };
  });
  // Python's slice semantics (negative and missing bounds), as the reference server's get_task_range.
  envRoute('POST', 'task_range', async (req) => {
    const { split, start, stop } = parse(rangeBody, req.body);
    const env = envOf(req);
    return { tasks: (await allTasks(env, split)).slice(start ?? undefined, stop ?? undefined), env_name: env };
  });

  // A session id, streamed as the client expects: its task_id event, then an end carrying {sid}.
  app.post('/create_session', route, async (_req, reply) => {
    const s = await sessions.create();
    const stream = new EventStream(reply);
    stream.event('task_id', s.sid);
    stream.end(JSON.stringify({ sid: s.sid }));
  });

  app.post('/create', route, async (req) => {
    let s = await live(req);
    const body = parse(createBody, req.body);
    const address = body.task_spec ? body.task_spec : (body as { split: string; index: number });
    // The run: x-rft-run, else the body's `run`, else its task_spec's, else X-Deployment's owner part (clients
    // that send their own headers only).
    const run = firstRunLabel(
      [req.headers[RUN_HEADER], `header ${RUN_HEADER}`],
      [body.run, `body ${RUN_PARAM}`],
      [body.task_spec?.run, `task_spec.${RUN_PARAM}`],
      [deploymentRun(req), 'X-Deployment (run/environment)'],
    );
    const ref: RowRef = { env: body.env_name ?? deploymentEnv(req), split: address.split, index: address.index, body: canonicalJson(body), run };
    if (s.row) {
      // The client retries a /create whose reply it lost: the same body is that retry.
      if (s.row.body !== ref.body) throw errors.badRequest('this session already has a task');
      return { sid: s.sid };
    }
    if (ref.env !== undefined) environments.get(ref.env);
    s = await sessions.setRow(s, ref);
    // (another replica's /create, with another body, came first)
    if (s.row?.body !== ref.body) throw errors.badRequest('this session already has a task');
    // With one environment (or named), the rollout starts now: its sandbox is built while the client asks for the prompt.
    const only = environments.list().length === 1 ? environments.list()[0]!.name : undefined;
    const env = ref.env ?? only;
    if (env !== undefined) {
      try {
        await rolloutOf(s, env);
      } catch (e) {
        await sessions.clearRow(s, ref);
        throw e;
      }
    }
    req.log.info({ trace_id: s.sid, environment: env, split: ref.split, index: ref.index, run }, 'ors session');
    return { sid: s.sid };
  });

  app.post('/ping', route, async (req) => {
    const s = await sessions.get(sidOf(req));
    if (!s) throw errors.notFound('session');
    await sessions.touch(s);
    return { status: 'ok' };
  });
  // The client ends its session: an episode without an answer is ended by the core's rule first (its grade
  // failing is ours: a 5xx, the client retries, the session is kept), then the session and its rollout go.
  const remove = async (req: FastifyRequest) => {
    const sid = sidOf(req);
    const s = await sessions.get(sid);
    if (s?.rollout) {
      // Taken before the grade: a submit sent meanwhile finds the episode over; a retried end (this one
      // failed, or /delete then /delete_session) takes it again and gets the recorded grade.
      const claimed = await sessions.finish(s, Sessions.END_TASK, true);
      const g = await core.endUnanswered(s.rollout, { by: 'client', lastUsed: s.held.lastUsed }, { answered: !claimed, broken: s.broken === true });
      if (g) req.log.info({ trace_id: s.sid, reward: g.score, replayed: g.replayed }, 'ors session ended unanswered: graded');
    }
    const r = await sessions.delete(sid);
    // Past its idle limit and not swept yet: it ended idle, as the sweep would have ended it.
    if (r && !s) await expired(r);
    else if (r) await endSession(r.traceId);
    return { sid };
  };
  app.post('/delete', route, remove);
  app.post('/delete_session', route, remove);

  /** The request's session with its rollout, under the environment the request is for. */
  const started = async (req: FastifyRequest) => {
    const s = await live(req);
    return rolloutOf(s, envOf(req, s));
  };
  envRoute('GET', 'prompt', async (req) => {
    const s = await started(req);
    return promptOf(await rowAt(environments, s.rollout.environment!, s.row!.split, s.row!.index));
  });
  envRoute('GET', 'task_tools', async (req) => {
    const { rollout } = await started(req);
    return toolSpecs(registry, [...rollout.tools], submitTool);
  });

  envRoute('POST', 'call', async (req, reply) => {
    const { name, input, task_id: sent } = parse(callBody, req.body);
    const bound = await started(req);
    const { rollout } = bound;
    let s: Session = bound;
    const fingerprint = fingerprintOf(name, canonicalJson(input));
    const taskId = sent ?? Sessions.mintTaskId();
    // A task_id is known by the session (a submit's, written with the episode's end) or by the ledger (a
    // tool call's start, its exactly-once key). One known by neither never started (its stream broke first,
    // or a failure of ours un-begun it): it runs now under that id, as a new call.
    const known = sent == null ? undefined : (s.tasks[sent] ?? (await recordedCall(rollout.traceId, sent)));
    if (known !== undefined && known !== fingerprint) throw errors.callConflict(taskId);
    // A submit's task_id and the end it takes in one write, before its stream starts (a tool call's is
    // its start in the ledger: no write of the session's).
    if (known === undefined && endsEpisode(name, input, submitTool)) s = await sessions.addTask(s, taskId, fingerprint, true);
    // A reconnect joins the run still going on this replica; else the call runs (again) under its task_id,
    // which the ledger answers with the recorded result (and the grading service with the recorded grade).
    const here = `${s.sid}\0${taskId}`;
    let task = tasks.get(here);
    if (task?.failed && task.failures >= MAX_CALL_FAILURES) {
      // Failed on our side for good: the episode is lost, never graded when it ends unanswered.
      await sessions.markBroken(s);
      throw errors.orsCallFailed(isRftError(task.failed) ? task.failed.code : 'internal');
    }
    if (!task || task.failed) {
      task ??= { result: Promise.resolve(''), failed: undefined, failures: 0 };
      tasks.set(here, task);
      // (a failed call whose client never reconnects stays: the oldest go first)
      if (tasks.size > MAX_TASKS_HELD) tasks.delete(tasks.keys().next().value!);
      start(task, s);
    }
    await stream(req, reply, s, taskId, task);

    function start(t: Task, session: Session): void {
      t.failed = undefined;
      t.result = runCall({ core, sessions, session, rollout, taskId, name, input, submitTool, reconnect: known !== undefined }).then(
        (r: CallResult) => {
          tasks.delete(here);
          return JSON.stringify(r);
        },
        (e: unknown) => {
          t.failed = e instanceof Error ? e : new Error(String(e));
          t.failures++;
          req.log.warn({ err: e, trace_id: s.sid, task_id: taskId, tool: name }, 'ors call failed on our side: the client reconnects and it runs again');
          throw t.failed;
        },
      );
      t.result.catch(() => undefined);
    }
  });

  /** A tool call the ledger recorded under this task_id, as a fingerprint (its tool and canonical input). */
  async function recordedCall(traceId: string, taskId: string): Promise<string | undefined> {
    const c = await stored(core.store.getCall(traceId, taskId));
    return c && fingerprintOf(c.tool, c.arguments);
  }

  /** Calls running (or failed on our side) on this replica, by session and task_id. */
  const tasks = new Map<string, Task>();

  /** The call's stream: its task_id at once, pings while it runs, its result as one `end`; a failure of ours ends it without one. */
  async function stream(req: FastifyRequest, reply: FastifyReply, s: Session, taskId: string, task: Task): Promise<void> {
    const out = new EventStream(reply);
    out.event('task_id', taskId);
    out.pings(pingMs);
    try {
      const result = await task.result;
      out.end(result);
      req.log.info({ trace_id: s.sid, task_id: taskId, closed: out.closed }, 'ors call');
    } catch {
      out.abort();
    }
  }
}
