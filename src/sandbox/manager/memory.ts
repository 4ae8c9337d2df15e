// What each kind of thing a session holds costs in memory, measured: a sandbox of the driver (idle,
// as made), and an instance of each bridged MCP server (its process tree once started). Each kind
// starts from a default measured on the 2-core dev host (README, "Memory"), and from then on is the mean
// of its latest live measurements (a fresh sandbox measured from outside it: Sandbox.memoryBytes; an
// instance's process tree on the host, or its sandbox's growth when it runs inside one). The
// admission (admission.ts) reserves, for each rollout's sandbox, the sandbox and one instance of
// every rollout MCP server (a session may start each of them), at the costs known when it asks.
const MB = 1024 * 1024;

/**
 * An idle sandbox, per driver, as Sandbox.memoryBytes measures it (README, "Memory"; 10 at once on
 * the 2-core dev host): bwrap 0.31 MB (PSS of the sandbox uid's processes), process driver none of
 * its own, Docker 0.57 MB under runc (the container's cgroup less its inactive page cache); under
 * gVisor 12.8 MB (the same cgroup holds its kernel), which the live measurements reach after the
 * first sandbox. What runs beside a sandbox on the host (bwrap's own process, containerd's shim) is
 * not in these.
 */
export const MEASURED_SANDBOX_BYTES: Record<string, number> = {
  bwrap: Math.round(0.31 * MB),
  process: 0,
  docker: Math.round(0.57 * MB),
};

/** One FastMCP server instance (examples/python/tools/server.py, handshake done): 66.7 MB PSS, 86.9 MB RSS, 10 at once. */
export const MEASURED_MCP_BYTES = Math.round(66.7 * MB);

/** Live measurements kept per kind (their mean is the kind's cost). */
const KEPT = 16;
/** Past the first KEPT of a kind, one in this many is measured (a measurement reads /proc or asks the engine). */
const SAMPLE_EVERY = 32;

export class MemoryCosts {
  private readonly seen = new Map<string, number[]>();
  private readonly rollout = new Set<string>();

  constructor(private readonly defaults: Record<string, number> = {}) {}

  /** One of `kind`, in bytes: the mean of its latest measurements, else its measured default. */
  of(kind: string): number {
    const s = this.seen.get(kind);
    if (s?.length) return Math.round(s.reduce((a, b) => a + b, 0) / s.length);
    return this.defaults[kind] ?? (kind.startsWith('mcp:') ? MEASURED_MCP_BYTES : (MEASURED_SANDBOX_BYTES[kind.replace(/^sandbox:/, '')] ?? MEASURED_SANDBOX_BYTES.docker!));
  }

  private readonly asked = new Map<string, number>();

  /** Whether to measure this new one of `kind`: the first KEPT, then one in SAMPLE_EVERY. */
  due(kind: string): boolean {
    const n = (this.asked.get(kind) ?? 0) + 1;
    this.asked.set(kind, n);
    return n <= KEPT || n % SAMPLE_EVERY === 0;
  }

  /** A live measurement of one of `kind` (ignored when not positive: the thing was gone). */
  record(kind: string, bytes: number): void {
    if (!(bytes > 0)) return;
    const s = this.seen.get(kind) ?? [];
    s.push(bytes);
    if (s.length > KEPT) s.shift();
    this.seen.set(kind, s);
  }

  /** Kinds every rollout's sandbox may start one of (the rollout MCP servers: `mcp:<name>`). */
  perRollout(kind: string): void {
    this.rollout.add(kind);
  }

  /** What a rollout's sandbox reserves: the sandbox, and one of each kind a rollout may start. */
  rolloutBytes(driver: string): number {
    return this.of(`sandbox:${driver}`) + [...this.rollout].reduce((sum, k) => sum + this.of(k), 0);
  }

  /** Every kind's cost now, in MB (for /readyz and the logs). */
  snapshot(driver: string): Record<string, number> {
    const kinds = new Set([`sandbox:${driver}`, ...this.rollout, ...this.seen.keys()]);
    return Object.fromEntries([...kinds].map((k) => [k, Math.round((this.of(k) / MB) * 100) / 100]));
  }
}
