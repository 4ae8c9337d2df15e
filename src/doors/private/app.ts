// The private listener: one credential-less listener (RFT_PRIVATE_PORT) for the trainers whose clients
// send no credential at all (OpenEnv's WebSocket client, slime's and OpenRLHF's reward calls, verl's
// SandboxFusion client). It must stay on loopback or the trainers' private network (src/doors/README.md).
import { LogController, type FastifyError, type FastifyInstance } from 'fastify';
import { errors } from '../../errors.js';
import { toRftError } from '../../http/error-replies.js';
import { registerBodyErrors, registerJsonBody } from '../../http/json-body.js';
import { buildListener } from '../../http/listener.js';
import { doorListenerSettings, type DoorListenerSettings } from '../listen.js';
import type { Environments } from '../../environments/environment.js';
import { privateDoors, type PrivateDoor, type PrivateDoorContext } from './doors.js';

export const PRIVATE_LISTENER = 'private';
/** Its own routes' first segments. */
const OWN_SEGMENTS = ['healthz'];

/** Refuses an environment whose name a door's route would shadow (an OpenEnv URL /{env}/ws would reach the wrong thing). */
export function checkShadowing(environments: Environments, doors: readonly PrivateDoor[] = privateDoors): void {
  const taken = new Map<string, string>(OWN_SEGMENTS.map((s) => [s, PRIVATE_LISTENER]));
  for (const d of doors) for (const s of d.segments) taken.set(s, d.name);
  for (const env of environments.list()) {
    const door = taken.get(env.name);
    if (door !== undefined) throw errors.environmentShadowsRoute(env.name, `/${env.name}`, door);
  }
}

export async function buildPrivateApp(
  ctx: PrivateDoorContext,
  bodyLimitBytes: number,
  doors: readonly PrivateDoor[] = privateDoors,
  listener: DoorListenerSettings = doorListenerSettings(ctx.config, PRIVATE_LISTENER),
): Promise<FastifyInstance> {
  checkShadowing(ctx.environments, doors);
  // The listener every listener is (src/http/listener.ts): timeouts, its share of the connections, no
  // foreign Host or browser, URL decoding answered 400.
  const { app, limits } = buildListener({
    name: PRIVATE_LISTENER,
    fastify: {
      loggerInstance: ctx.log.child({ listener: PRIVATE_LISTENER }),
      logController: new LogController({ disableRequestLogging: true }),
    },
    bodyLimitBytes,
    ...listener,
  });
  // The main listener's body rules: JSON only (a page's text/plain form post is no trainer's), its nesting limit.
  registerJsonBody(app, ctx.config.maxJsonDepth);
  registerBodyErrors(app);
  // Every error carries an RFT_ERR_* code, Fastify's own included (a body over the limit, bad JSON).
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const e = toRftError(err, req, limits);
    if (e.statusCode >= 500) req.log.error({ err }, 'private listener failed');
    void reply.code(e.statusCode).send(e.toJSON());
  });
  app.setNotFoundHandler((req, reply) => {
    const e = errors.notFound(`${req.method} ${req.url.split('?')[0]} on the private listener (doors: ${doors.map((d) => d.name).join(', ') || 'none'})`);
    void reply.code(e.statusCode).send(e.toJSON());
  });
  app.get('/healthz', async () => ({ ok: true, listener: PRIVATE_LISTENER, doors: doors.map((d) => d.name) }));
  for (const door of doors) await door.register(app, { ...ctx, log: ctx.log.child({ door: door.name }) });
  return app;
}
