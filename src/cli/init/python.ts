// A project whose tools are a Python MCP server (FastMCP, tools/server.py): its install script and its
// README section. No mcp.json: the server runs every tools/*.py from the project's .venv in each
// rollout's sandbox (mcp/config.ts pythonToolServers; docs/python-tools.md), which sees the host only
// through the OS directories and the mounts (.venv and tools/, never the project folder, which holds
// data/), so the virtual environment is made from /usr/bin/python3, whose interpreter the sandbox has
// (bubblewrap binds /usr; the Docker sandbox image has Debian bookworm's python3 at the same path),
// never from a python3 under a home directory (pyenv, conda) that no sandbox shows.

export const PYTHON = '/usr/bin/python3';
export const VENV = '.venv';

/** The package.json script that makes .venv and installs tools/requirements.txt into it (npm install runs it). */
export const SETUP_SCRIPT =
  `${PYTHON} -m venv ${VENV} && PIP_RETRIES=0 ${VENV}/bin/python -m pip install --quiet --disable-pip-version-check -r tools/requirements.txt`;

export function pythonSection(tools: string[]): string {
  return `## Python tools

The tools (${tools.map((t) => `\`${t}\``).join(', ')}) are the FastMCP server \`tools/server.py\`, and the grader is
\`graders/number_match.py\`: \`grade(sample, item)\`, OpenAI's \`python\` grader as a file, named by it. \`npm install\`
makes a virtual environment, \`.venv\`, from \`${PYTHON}\` and installs \`tools/requirements.txt\` into it (\`npm run
setup:python\` does it again, after you add a requirement). There is no \`mcp.json\` to write: the server runs every
\`tools/*.py\` with \`.venv\`'s Python, once per rollout **inside the rollout's sandbox**: no network, the sandbox's
limits, the rollout's workspace as its working directory, and \`.venv\` and \`tools/\` visible read-only. Its tools are
served at \`/tools\` and \`/mcp\` with the rollout's budget and record, like any tool. Nothing in the project names an
absolute path: move the folder, run \`npm install\` there, and it runs.

To add a tool, add a function with type hints and a docstring under \`@mcp.tool\` in \`tools/server.py\` (or a new
\`tools/NAME.py\` FastMCP file ending in \`mcp.run()\`), restart the server, and copy the tool's schema from
\`GET /v1/tools\` into the rows' \`tools\`. A call through the running server:

\`\`\`sh
curl -s http://127.0.0.1:8787/tools -H "Authorization: Bearer $(cat data/api-key)" -H 'content-type: application/json' \\
  -d '{"type":"function_call","call_id":"c1","trace_id":"t1","name":"calculate","arguments":"{\\"expression\\":\\"(1480 - 1250) / 1250 * 100\\"}"}'
\`\`\`

Every parent folder of this one must be searchable by others (\`chmod o+x\`), since the sandbox reads the mounts as an
unprivileged user. The sandbox drivers that run it: \`bwrap\` (the default on Linux) and \`docker\` (the shipped sandbox
image has the same Python 3.11 as Debian bookworm's \`${PYTHON}\`; a host with another Python needs an image with that
version, \`RFT_DOCKER_IMAGE\`). With \`RFT_SANDBOX=process\` nothing is isolated: the server then runs on the host,
unsandboxed.
`;
}
