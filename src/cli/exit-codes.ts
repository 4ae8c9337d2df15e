// The CLI's exit statuses (documented in README.md, "Exit codes"). A failure prints one line,
// `error RFT_ERR_...: message`, and exits with the status of its code's class.
import { errors, RftError } from '../errors.js';

export const EXIT = {
  ok: 0,
  /** The command ran and found problems: dataset check, check-grader thresholds, replay divergence, every rollout discarded. */
  problems: 1,
  /** Bad usage or input: options, files, datasets, configuration, units. */
  usage: 2,
  /** The rft-endpoints server: unreachable, refused the credential, or answered something unexpected. */
  server: 3,
  /** The model API the emulator plays the trainer with. */
  model: 4,
  /** `serve` could not start: port in use, store in use or unreachable, insecure listen (main, NeMo Gym or private listener), sandbox driver. */
  serve: 5,
  /** A bug: anything without a code. */
  internal: 70,
  /** Interrupted (Ctrl-C). */
  interrupted: 130,
} as const;

const BY_CODE: Record<string, number> = {
  [errors.allDiscarded.code]: EXIT.problems,
  [errors.cliUsage.code]: EXIT.usage,
  [errors.file.code]: EXIT.usage,
  [errors.dataset.code]: EXIT.usage,
  [errors.config.code]: EXIT.usage,
  [errors.modelConfig.code]: EXIT.usage,
  [errors.modelScript.code]: EXIT.usage,
  [errors.unitLoad.code]: EXIT.usage,
  [errors.unitDuplicate.code]: EXIT.usage,
  [errors.unknownGrader.code]: EXIT.usage,
  [errors.unknownTool.code]: EXIT.usage,
  [errors.initTarget.code]: EXIT.usage,
  [errors.graderConfig.code]: EXIT.usage,
  [errors.environmentLoad.code]: EXIT.usage,
  [errors.jobUnits.code]: EXIT.usage,
  [errors.environmentShadowsRoute.code]: EXIT.usage,
  [errors.orsShadowsRoute.code]: EXIT.usage,
  [errors.serverUnreachable.code]: EXIT.server,
  [errors.serverTls.code]: EXIT.server,
  [errors.serverAuth.code]: EXIT.server,
  [errors.serverReply.code]: EXIT.server,
  [errors.notFound.code]: EXIT.server,
  [errors.modelApi.code]: EXIT.model,
  [errors.modelReplyTooLarge.code]: EXIT.model,
  [errors.portInUse.code]: EXIT.serve,
  [errors.storeInUse.code]: EXIT.serve,
  [errors.storeConnect.code]: EXIT.serve,
  [errors.insecureListen.code]: EXIT.serve,
  [errors.nemoGymRemote.code]: EXIT.serve,
  [errors.privateRemote.code]: EXIT.serve,
  [errors.processDriverNotAllowed.code]: EXIT.serve,
  [errors.sandboxUnavailable.code]: EXIT.serve,
  [errors.dockerRuntimeMissing.code]: EXIT.serve,
  [errors.dockerSocketDenied.code]: EXIT.serve,
};

export function exitStatusOf(e: RftError): number {
  return BY_CODE[e.code] ?? EXIT.internal;
}

const FILE_ERRNO = new Set(['ENOENT', 'EACCES', 'EISDIR', 'ENOTDIR', 'EPERM', 'EROFS', 'ENOSPC', 'EEXIST']);

/** A Node system error about a path (an output file in a missing folder, say) as a coded file error. */
export function codedSystemError(e: unknown): RftError | undefined {
  const err = e as NodeJS.ErrnoException | null;
  if (!err || typeof err !== 'object' || typeof err.code !== 'string') return undefined;
  if (FILE_ERRNO.has(err.code) && typeof err.path === 'string') return errors.file(err.path, `${err.code} (${err.syscall ?? 'file'} failed)`);
  return undefined;
}
