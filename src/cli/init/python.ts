// A project whose tools are a Python MCP server (FastMCP, tools/server.py): its mcp.json, its install
// script and its README section. The server runs in each rollout's sandbox (docs/python-tools.md),
// which sees the host only through the OS directories and the mounts, so:
// - the virtual environment is made from /usr/bin/python3, whose interpreter the sandbox has (bubblewrap
//   binds /usr; the Docker sandbox image has Debian bookworm's python3 at the same path), never from a
//   python3 under a home directory (pyenv, conda) that no sandbox shows;
// - mcp.json names the project's .venv and tools/ by absolute path, as mounts (read-only), never the
//   project folder itself, which holds data/ (the API key, the record).
import { join } from 'node:path';

export const PYTHON = '/usr/bin/python3';
export const VENV = '.venv';

/** The package.json script that makes .venv and installs tools/requirements.txt into it (npm install runs it). */
export const SETUP_SCRIPT =
  `${PYTHON} -m venv ${VENV} && PIP_RETRIES=0 ${VENV}/bin/python -m pip install --quiet --disable-pip-version-check -r tools/requirements.txt`;

/** mcp.json: the FastMCP server, one instance per rollout inside its sandbox. */
export function mcpJson(dir: string): string {
  const venv = join(dir, VENV);
  const tools = join(dir, 'tools');
  const config = {
    mcpServers: {
      python: {
        command: join(venv, 'bin/python'),
        args: [join(tools, 'server.py')],
        env: { PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' },
        sandbox: true,
        mounts: [venv, tools],
        // Importing FastMCP takes seconds on a busy machine, and every rollout starts its own instance.
        startTimeoutMs: 60_000,
      },
    },
  };
  return JSON.stringify(config, null, 2) + '\n';
}

export function pythonSection(tools: string[]): string {
  return `## Python tools

The tools (${tools.map((t) => `\`${t}\``).join(', ')}) are the FastMCP server \`tools/server.py\`. \`npm install\` makes a
virtual environment, \`.venv\`, from \`${PYTHON}\` and installs \`tools/requirements.txt\` into it (\`npm run setup:python\`
does it again, after you add a requirement). \`mcp.json\` has the server run once per rollout **inside the rollout's
sandbox** (\`"sandbox": true\`): no network, the sandbox's limits, the rollout's workspace as its working directory,
and \`.venv\` and \`tools/\` visible read-only. Its tools are served at \`/tools\` and \`/mcp\` with the rollout's budget
and record, like any tool.

To add a tool, add a function with type hints and a docstring under \`@mcp.tool\` in \`tools/server.py\`, restart the
server, and copy the tool's schema from \`GET /v1/tools\` into the rows' \`tools\`. A call through the running server:

\`\`\`sh
curl -s http://127.0.0.1:8787/tools -H "Authorization: Bearer $(cat data/api-key)" -H 'content-type: application/json' \\
  -d '{"type":"function_call","call_id":"c1","trace_id":"t1","name":"calculate","arguments":"{\\"expression\\":\\"(1480 - 1250) / 1250 * 100\\"}"}'
\`\`\`

\`mcp.json\` names \`.venv\` and \`tools/\` by absolute path: after moving this folder, run \`npm install\` there and
correct the paths. Every parent folder of this one must be searchable by others (\`chmod o+x\`), since the sandbox
reads the mounts as an unprivileged user. The sandbox drivers that run it: \`bwrap\` (the default on Linux) and
\`docker\` (the shipped sandbox image has the same Python 3.11 as Debian bookworm's \`${PYTHON}\`; a host with another
Python needs an image with that version, \`RFT_DOCKER_IMAGE\`). With \`RFT_SANDBOX=process\` nothing is isolated: the
server then runs on the host, unsandboxed.
`;
}
