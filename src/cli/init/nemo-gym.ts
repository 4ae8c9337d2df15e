// What a new project needs to be trained by NeMo Gym (trainer-doors.md §1): a config whose resources
// server entry is the project's NeMo Gym door, Gym's simple_agent and a model server. ng_run starts
// every entry that has an `entrypoint` (from a venv it builds in resources_servers/<name>/, which
// needs a requirements.txt) and stops everything when one exits; a server named by host and port
// alone cannot be referenced. So the door's entry points at a stub that binds nothing and waits,
// while `host`/`port` send every call to the door.

export const NEMO_GYM = {
  /** The door's port in the config; the project's README starts the server with it. */
  doorPort: 8788,
  /** A local OpenAI-compatible server (vLLM's default port); the README says to change it. */
  modelBaseUrl: 'http://127.0.0.1:8000/v1',
  resourcesServer: 'rft_env',
  resourcesImpl: 'rft',
  agent: 'rft_agent',
  model: 'policy_model',
  config: 'nemo-gym.yaml',
} as const;

export interface NemoGymInput {
  name: string;
  /** Gym's `domain` of the resources server (config_types.py Domain). */
  domain: string;
  /** simple_agent's max_steps: the job's max_episode_steps, so both trainers play episodes as long. */
  maxSteps: number;
}

const q = (s: string) => JSON.stringify(s); // a JSON string is a YAML double-quoted scalar

function config(t: NemoGymInput): string {
  const g = NEMO_GYM;
  return `# NeMo Gym config of ${t.name}: its resources server is the NeMo Gym door of rft-endpoints.
# Start the server with the door first:   RFT_NEMO_GYM_PORT=${g.doorPort} npm start
# then, from this folder:                  ng_run "+config_paths=[${g.config}]"
${g.resourcesServer}:
  resources_servers:
    ${g.resourcesImpl}:
      # resources_servers/${g.resourcesImpl}/app.py only waits: the door at host:port serves every route.
      entrypoint: app.py
      domain: ${t.domain}
      verified: false
      description: ${q(`${t.name}: tools, sandboxes and grader served by rft-endpoints`)}
      host: 127.0.0.1
      port: ${g.doorPort}
${g.agent}:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      max_steps: ${t.maxSteps}
      resources_server:
        type: resources_servers
        name: ${g.resourcesServer}
      model_server:
        type: responses_api_models
        name: ${g.model}
${g.model}:
  responses_api_models:
    openai_model:
      entrypoint: app.py
      # Any server with the Responses API (openai_model calls {openai_base_url}/responses).
      openai_base_url: ${q(g.modelBaseUrl)}
      openai_api_key: "EMPTY"
      openai_model: "policy"
`;
}

const STUB = `# The resources server of this project is rft-endpoints' NeMo Gym door, which nemo-gym.yaml names
# by host and port. ng_run starts every config entry that has an entrypoint and shuts everything down
# when one exits, so this entry only waits: it binds no port and serves nothing.
import time

while True:
    time.sleep(3600)
`;

/** The config and the stub entry, by path in the project. */
export function nemoGymFiles(t: NemoGymInput): Record<string, string> {
  const dir = `resources_servers/${NEMO_GYM.resourcesImpl}`;
  return {
    [NEMO_GYM.config]: config(t),
    [`${dir}/app.py`]: STUB,
    // ng_run builds a venv from this file before it starts the entry; the stub imports nothing.
    [`${dir}/requirements.txt`]: '# nothing: app.py is a stub, the door serves the routes\n',
  };
}
