// The sandbox package's public surface.
export { SandboxManager } from './manager.js';
export type { SandboxManagerOptions } from './manager.js';
export { selectDriver } from './select.js';
export type { DriverName, DriverOptions } from './select.js';
export { createManagerFromConfig, instanceIdFor } from './from-config.js';
export { defaultLimits, gradingLimits } from './limits.js';
export { copyNote } from './copy-out.js';
export type { CopyBounds, CopyReport } from './copy-out.js';
export { ProcessDriver, assertProcessDriverAllowed } from './process-driver.js';
export { BwrapDriver } from './bwrap-driver.js';
export { DockerDriver } from './docker-driver.js';
export type { DockerDriverOptions } from './docker-driver.js';
export type { LocalDriverOptions } from './local-driver.js';
export { workspaceSource, populateWorkspace, assertNotHidden } from './workspace.js';
export type { WorkspaceSource } from './workspace.js';
export { WORKSPACE_MOUNT, workspaceComponents } from './paths.js';
export { HostWorkspace } from './host-fs.js';
export type { Sandbox, SandboxDriver, SandboxLimits, SandboxSpec, SandboxStats, ExecOptions, ExecResult, FileEntry } from './types.js';
