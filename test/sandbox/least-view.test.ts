// The host a sandbox sees is what its tools need and nothing more: no global npm packages (a global
// install of this package would carry its examples and hidden tests), and never the templates root,
// the data dir or the package itself, wherever they are installed, even inside a directory the
// sandbox must see (/usr). No host path in what the sandbox's processes show either.
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Sandbox, SandboxDriver } from '../../src/sandbox/types.js';
import { canSwitchUid } from '../../src/sandbox/host/uids.js';
import { selectDriver } from '../../src/sandbox/select.js';
import { describeIf } from '../helpers/require.js';
import { DOCKER_IMAGE, driversPresent, spec, tempRoot } from './helpers.js';
import { runLabels } from '../helpers/run-label.js';

const present = await driversPresent();
const root = canSwitchUid();

for (const name of ['bwrap', 'docker'] as const) {
  const why = !present[name] ? `${name} sandbox driver not available` : 'needs root to stage a package under /usr';
  describeIf(present[name] && root, `least view of the host on ${name}`, why)(`least view of the host (${name})`, () => {
    // As if the package were installed globally: its templates and data under /usr.
    const installed = `/usr/local/share/rft-least-view-${process.pid}`;
    const templates = join(installed, 'examples');
    const data = join(installed, 'data');
    const mcp = join(installed, 'node_modules', 'some-mcp-server');
    let tmp: Awaited<ReturnType<typeof tempRoot>>;
    let driver: SandboxDriver;
    let sb: Sandbox;
    beforeAll(async () => {
      for (const d of [join(templates, 'task', 'hidden'), data, mcp]) await mkdir(d, { recursive: true });
      await writeFile(join(templates, 'task', 'hidden', 'cases.json'), 'hidden-test-secret');
      await writeFile(join(data, 'rft.sqlite'), 'server-data-secret');
      await writeFile(join(mcp, 'index.js'), 'mcp-server-code');
      tmp = await tempRoot();
      driver = await selectDriver(name, {
        sandboxesRoot: tmp.root,
        instanceId: `least-${name}-${process.pid}`,
        dockerImage: DOCKER_IMAGE,
        dockerLabels: runLabels,
        hiddenPaths: [templates, data, installed],
      });
      // The MCP bridge's read-only mount lies inside the hidden package: it must still be there.
      sb = await driver.create({ ...spec('trace_least'), readOnlyMounts: [mcp] });
    });
    afterAll(async () => {
      await sb?.destroy();
      await driver?.close?.();
      await tmp?.cleanup();
      await rm(installed, { recursive: true, force: true });
    });

    it('shows neither the templates root, the data dir nor the package, though they are under /usr', async () => {
      const r = await sb.exec(`cat ${templates}/task/hidden/cases.json ${data}/rft.sqlite; ls -A ${installed} ${templates} ${data}; true`);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).not.toContain('secret');
      // only the way to the read-only mount below
      expect(r.stdout.trim().split('\n').filter((l) => l && !l.endsWith(':'))).toEqual(['node_modules']);
    });

    it('still shows a read-only mount it was given inside them', async () => {
      const r = await sb.exec(`cat ${mcp}/index.js; touch ${mcp}/x 2>/dev/null || echo read-only`);
      expect(r.stdout).toBe('mcp-server-code' + 'read-only\n');
    });

    it('shows no global npm packages', async () => {
      const host = await readdir('/usr/lib/node_modules').catch(() => [] as string[]);
      const r = await sb.exec('ls -A /usr/lib/node_modules /usr/local/lib/node_modules 2>/dev/null; true');
      for (const pkg of host) expect(r.stdout.split('\n')).not.toContain(pkg);
    });

    it('shows no host path in PID 1 or in its own mounts', async () => {
      const r = await sb.exec('cat /proc/1/cmdline | tr "\\0" " "; echo; cat /proc/self/mountinfo');
      expect(r.stdout).not.toContain(tmp.root);
      expect(r.stdout).not.toMatch(/rft-endpoints\/rft-|\/sb_[0-9a-f]{16}/);
    });
  });
}
