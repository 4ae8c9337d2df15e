// The sandbox package's public surface.
export { SandboxManager } from './manager/manager.js';
export type { SandboxManagerOptions } from './manager/manager.js';
export { selectDriver } from './select.js';
export type { DriverName, DriverOptions } from './select.js';
export { createManagerFromConfig, instanceIdFor } from './from-config.js';
export { defaultLimits, gradingLimits } from './workspace/limits.js';
export { copyNote } from './workspace/copy-out.js';
export type { CopyBounds, CopyReport } from './workspace/copy-out.js';
export { ProcessDriver, assertProcessDriverAllowed } from './drivers/process/driver.js';
export { BwrapDriver } from './drivers/bwrap/driver.js';
export { DockerDriver } from './drivers/docker/driver.js';
export type { DockerDriverOptions } from './drivers/docker/driver.js';
export type { LocalDriverOptions } from './host/local-driver.js';
export { workspaceSource, populateWorkspace, assertNotHidden } from './workspace/workspace.js';
export type { WorkspaceSource } from './workspace/workspace.js';
export { WORKSPACE_MOUNT, workspaceComponents } from './workspace/paths.js';
export { HostWorkspace } from './workspace/host-fs.js';
export type { Sandbox, SandboxDriver, SandboxLimits, SandboxSpec, SandboxStats, ExecOptions, ExecResult, FileEntry } from './types.js';
