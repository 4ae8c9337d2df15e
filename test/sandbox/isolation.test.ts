// What a command sees inside the bwrap and docker sandboxes: an unprivileged user with no
// capabilities, a read-only tree outside /workspace and /tmp, no network interface but loopback.
import { expect, it } from 'vitest';
import { DockerApi } from '../../src/sandbox/drivers/docker/api.js';
import type { DockerSandbox } from '../../src/sandbox/drivers/docker/sandbox.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { describeIf } from '../helpers/require.js';
import { driversPresent, driverWithSandbox, spec } from './helpers.js';

const present = await driversPresent();

// Each driver also with its sandbox handed over by a warm pool (issue 24): prepared ahead, it must give away no more.
for (const [name, pooled] of (['bwrap', 'docker', 'gvisor'] as const).flatMap((n) => [[n, false] as const, [n, true] as const])) {
  const label = pooled ? `${name}, pooled` : name;
  describeIf(present[name], `isolation on ${label}`, `${name} sandbox driver not available`)(`isolation (${label})`, () => {
    const ctx = driverWithSandbox(name, spec('trace_iso', { labels: { 'rft-endpoints.trace_id': 'trace_iso' } }), { pooled });
    const sb = { exec: (...a: Parameters<Sandbox['exec']>) => ctx.sb.exec(...a), get id() { return ctx.sb.id; } };

    it('runs commands as a non-root user without capabilities', async () => {
      const r = await sb.exec("id -u; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status | awk '{print $2}' | sort -u");
      const [uid, ...caps] = r.stdout.trim().split('\n');
      expect(Number(uid)).toBeGreaterThan(0);
      expect(caps).toEqual(['0000000000000000']);
    });

    it('keeps everything outside /workspace and /tmp read-only', async () => {
      const r = await sb.exec('for d in / /usr /etc /bin; do touch $d/rft-probe 2>/dev/null && echo "wrote $d"; done; touch /workspace/ok /tmp/ok && echo writable');
      expect(r.stdout).toBe('writable\n');
    });

    it('has no network interface but loopback', async () => {
      const r = await sb.exec('cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "');
      expect(r.stdout.trim().split('\n')).toEqual(['lo']);
    });

    // Debian's runsc applies the engine's seccomp profile to a container's first process only, not to
    // execs: a user namespace made there is one of gVisor's own kernel, which grants nothing on the host.
    it.skipIf(name === 'gvisor')('refuses to create nested user namespaces', async () => {
      const r = await sb.exec('unshare --user true && echo nested');
      expect(r.stdout).not.toContain('nested');
    });

    it('starts in /workspace, which the model sees as its working directory', async () => {
      expect((await sb.exec('pwd')).stdout).toBe('/workspace\n');
    });

    if (name === 'docker' || name === 'gvisor') {
      const engineApi = (sb: Sandbox): DockerApi => new DockerApi((sb as unknown as DockerSandbox).engine.api.endpoint);
      it('answers RFT_ERR_SANDBOX_LOST once the container stopped, rather than go on in an empty workspace', async () => {
        const victim = await ctx.driver.create(spec('trace_iso_lost'));
        try {
          await victim.writeFile('kept.txt', 'work');
          const api = engineApi(victim);
          try {
            const filters = encodeURIComponent(JSON.stringify({ label: [`rft-endpoints.sandbox=${victim.id}`] }));
            const [c] = (await api.call<{ Id: string }[]>('GET', `/containers/json?filters=${filters}`)).body;
            await api.call('POST', `/containers/${c?.Id}/kill`);
          } finally {
            await api.close();
          }
          await expect(victim.exec('cat kept.txt')).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_LOST', statusCode: 503 });
          await expect(victim.readFile('kept.txt')).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_LOST' });
          expect((await sb.exec('echo other sandboxes go on')).stdout).toBe('other sandboxes go on\n');
        } finally {
          await victim.destroy();
        }
      });

      it('labels the container with the instance, trace id and creation time, and configures it locked down', async () => {
        const api = engineApi(ctx.sb);
        try {
          const filters = encodeURIComponent(JSON.stringify({ label: [`rft-endpoints.sandbox=${sb.id}`] }));
          const [c] = (await api.call<{ Id: string }[]>('GET', `/containers/json?filters=${filters}`)).body;
          const info = (await api.call<{ Config: { Labels: Record<string, string>; User: string }; HostConfig: Record<string, unknown> }>('GET', `/containers/${c?.Id}/json`)).body;
          expect(info.Config.Labels).toMatchObject({ 'rft-endpoints.instance': `${name}-${process.pid}` });
          // A pooled container was made before any rollout: it carries no trace id (labels are fixed at creation).
          expect(info.Config.Labels['rft-endpoints.trace_id']).toBe(pooled ? undefined : 'trace_iso');
          expect(Date.parse(info.Config.Labels['rft-endpoints.created_at'] ?? '')).toBeGreaterThan(0);
          expect(info.Config.User).not.toMatch(/^(0|root)(:|$)/);
          expect(Number(info.Config.Labels['rft-endpoints.uid'])).toBeGreaterThan(1_000_000);
          expect(info.HostConfig).toMatchObject({ NetworkMode: 'none', ReadonlyRootfs: true, CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] });
          expect(info.HostConfig['Memory']).toBeGreaterThan(0);
          expect(info.HostConfig['PidsLimit']).toBeGreaterThan(0);
          expect(info.HostConfig['Runtime']).toBe(name === 'gvisor' ? 'runsc' : 'runc');
        } finally {
          await api.close();
        }
      });
    }
  });
}
