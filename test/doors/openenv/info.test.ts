// OpenEnv's GET routes per environment, checked as their readers check them: `openenv validate`
// (huggingface/OpenEnv src/openenv/cli/_validation.py: /health a 200 with status "healthy", /metadata a 200
// with string name and description, /schema a 200 with action, observation and state objects) and the
// providers' /health readiness poll; /state a fresh environment's (http_server.py get_state_handler), and
// the schemas describe what the door really sends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { EnvClient } from '../../helpers/openenv-client.js';

describe('OpenEnv door: GET /{env}/health, /metadata, /schema, /state', () => {
  let server: TestServer;
  let priv: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
    priv = server.app.rft.privateDoors!.url;
  });
  afterAll(() => server?.close());

  const get = async (path: string) => {
    const res = await fetch(`${priv}${path}`);
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it('answer what `openenv validate` checks, for every environment', async () => {
    for (const env of server.app.rft.environments.list().map((e) => e.name)) {
      expect(await get(`/${env}/health`)).toEqual({ status: 200, json: { status: 'healthy' } });
      const meta = await get(`/${env}/metadata`);
      expect(meta.status).toBe(200);
      expect(meta.json.name).toBe(env);
      expect(typeof meta.json.description).toBe('string');
      const schema = await get(`/${env}/schema`);
      expect(schema.status).toBe(200);
      for (const k of ['action', 'observation', 'state']) expect(typeof schema.json[k]).toBe('object');
      expect(await get(`/${env}/state`)).toMatchObject({ status: 200, json: { episode_id: null, step_count: 0, environment: env } });
    }
    const none = await get('/nope/health');
    expect(none.status).toBe(404);
    expect((none.json.error as { code: string }).code).toBe('RFT_ERR_UNKNOWN_ENVIRONMENT');
  });

  it("the schemas name the actions the door takes and every field of an episode's state", async () => {
    const { json } = await get('/finqa/schema');
    const actionTypes = JSON.stringify(json.action).match(/"const":"[a-z_]+"/g);
    expect(actionTypes?.sort()).toEqual(['"const":"call_tool"', '"const":"list_tools"']);
    const env = await new EnvClient(`${priv}/finqa`).connect();
    try {
      await env.reset({ index: 0 });
      const state = await env.state();
      const props = Object.keys((json.state as { properties: Record<string, unknown> }).properties);
      expect(props.sort()).toEqual(Object.keys(state).sort());
      expect(Object.keys((await get('/finqa/state')).json).sort()).toEqual(Object.keys(state).sort());
    } finally {
      await env.close();
    }
  });
});
