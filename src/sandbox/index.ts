// The sandbox package's public surface.
export { defaultLimits, prlimitArgs } from './limits.js';
export { ProcessDriver, assertProcessDriverAllowed, isLoopbackHost } from './process-driver.js';
export type { LocalDriverOptions } from './local-driver.js';
export { BwrapDriver } from './bwrap-driver.js';
export { workspaceSource, populateWorkspace } from './workspace.js';
export type { WorkspaceSource } from './workspace.js';
export { WORKSPACE_MOUNT, workspaceComponents } from './paths.js';
export { HostWorkspace } from './host-fs.js';
export type { Sandbox, SandboxDriver, SandboxLimits, SandboxSpec, SandboxStats, ExecOptions, ExecResult, FileEntry } from './types.js';
