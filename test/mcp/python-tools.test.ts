// tools/*.py: a FastMCP file in the project's tools/ is served through the MCP bridge with no
// mcp.json, from the project's .venv, one instance per rollout inside the rollout's sandbox; its
// tools are listed with the schema FastMCP makes from the type hints and called at POST /tools.
// The project's .venv is made as `init --example python`'s postinstall makes it: from /usr/bin/python3
// (which every sandbox shows; a venv of a python3 under /root, like .ci/setup-python.sh's, runs in
// none), fastmcp from pip's configured index.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { driversPresent } from '../sandbox/helpers.js';
import { callTool, getJson } from './helpers.js';

const PYTHON = '/usr/bin/python3';
const hasVenv = spawnSync(PYTHON, ['-c', 'import ensurepip, venv'], { timeout: 60_000 }).status === 0;
let venv = '';

beforeAll(() => {
  if (!hasVenv) return;
  venv = join(mkdtempSync(join(tmpdir(), 'rft-pytools-venv-')), 'venv');
  chmodSync(dirname(venv), 0o755);
  const made = spawnSync('sh', ['-c', `${PYTHON} -m venv "$1" && PIP_RETRIES=0 "$1/bin/python" -m pip install --quiet --disable-pip-version-check fastmcp`, 'sh', venv], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  expect(made.status, made.stderr.split('\n').filter((l) => !l.startsWith('WARNING: Location')).join('\n')).toBe(0);
}, 360_000);
const present = await driversPresent();

const LOOKUP = `"""Prices of the shop's items."""
from pathlib import Path

from fastmcp import FastMCP

mcp = FastMCP("shop")
PRICES = {"apple": 1.25, "pear": 2.5}


@mcp.tool
def lookup_price(item: str, quantity: int = 1) -> float:
    """The price of \`quantity\` of an item."""
    if item not in PRICES:
        raise ValueError(f"no such item: {item}")
    Path("asked.txt").open("a").write(item + "\\n")
    return PRICES[item] * quantity


@mcp.tool
def asked() -> str:
    """Every item asked about in this rollout."""
    return Path("asked.txt").read_text() if Path("asked.txt").exists() else ""


if __name__ == "__main__":
    mcp.run(show_banner=False)
`;

for (const driver of ['process', 'bwrap'] as const) {
  const available = hasVenv && (driver === 'process' || present[driver]);
  const reason = hasVenv ? `${driver} sandbox driver not available` : `${PYTHON} cannot make a venv (apt-get install python3-venv)`;
  describeIf(available, `tools/*.py on ${driver}`, reason)(`tools/*.py FastMCP files, no mcp.json (${driver})`, () => {
    let srv: TestServer;
    let root: string;

    beforeAll(async () => {
      // The sandbox reads the mounts (the venv, tools/) as an unprivileged user: every parent must be searchable.
      root = mkdtempSync(join(tmpdir(), 'rft-pytools-'));
      chmodSync(root, 0o755);
      mkdirSync(join(root, 'tools'), { mode: 0o755 });
      writeFileSync(join(root, 'tools/lookup.py'), LOOKUP, { mode: 0o644 });
      writeFileSync(join(root, 'tools/_helpers.py'), 'raise SystemExit("not a tools file")\n', { mode: 0o644 });
      symlinkSync(venv, join(root, '.venv'));
      srv = await startTestServer({
        toolsDir: join(root, 'tools'),
        gradersDir: join(repoRoot, 'test/fixtures/units/graders'),
        env: { RFT_SANDBOX: driver, RFT_SANDBOX_GRACE_MS: '200', RFT_TOOL_TIMEOUT_MS: '60000' },
      });
    }, 120_000);
    afterAll(async () => {
      await srv?.close();
      rmSync(root, { recursive: true, force: true });
    });

    it('lists the FastMCP tools with the schemas of their type hints, and calls them per rollout', async () => {
      expect(existsSync(join(root, 'mcp.json'))).toBe(false);
      const listed = (await getJson(srv, '/v1/tools')) as { tools?: { function?: { name: string; description: string; parameters: Record<string, unknown> } }[] };
      const fns = JSON.stringify(listed);
      expect(fns).toContain('lookup_price');
      expect(fns).toContain('The price of `quantity` of an item.');
      expect(fns).toMatch(/"item":\{[^}]*"type":"string"/);
      expect(fns).toMatch(/"quantity":\{[^}]*"type":"integer"/);

      const a = `trace_${randomUUID()}`;
      const b = `trace_${randomUUID()}`;
      const price = await callTool(srv, a, 'lookup_price', { item: 'pear', quantity: 2 });
      expect(price.status, JSON.stringify(price.body)).toBe(200);
      expect(price.output).toBe('5.0');
      const missing = await callTool(srv, a, 'lookup_price', { item: 'kiwi' });
      expect(missing.output).toContain('no such item: kiwi');
      // The rollout's workspace is the instance's working directory: each rollout sees its own.
      expect((await callTool(srv, a, 'asked', {})).output).toBe('pear\n');
      expect((await callTool(srv, b, 'asked', {})).output).toBe('');
    }, 180_000);
  });
}

afterAll(() => {
  if (venv) rmSync(dirname(venv), { recursive: true, force: true });
});
