#!/usr/bin/env node
// rft-endpoints command line: each subcommand lives in its own module and registers itself.
import { Command } from 'commander';
import { isRftError } from '../errors.js';
import { register as registerServe } from './serve.js';
import { register as registerKeys } from './keys.js';
import { register as registerRollout } from './rollout.js';
import { register as registerReport } from './report.js';
import { register as registerReplay } from './replay.js';
import { register as registerExportImport } from './export-import.js';
import { register as registerRegrade } from './regrade.js';
import { register as registerCheckGrader } from './check-grader.js';

const program = new Command();
program
  .name('rft-endpoints')
  .description('Tool and grader endpoints for Agent RFT, plus local rollouts, replay and grading checks')
  .showHelpAfterError();

// subcommands (one import and one register call per module)
registerServe(program);
registerKeys(program);
registerRollout(program);
registerReport(program);
registerReplay(program);
registerExportImport(program);
registerRegrade(program);
registerCheckGrader(program);

try {
  await program.parseAsync(process.argv);
} catch (e) {
  // Coded errors (bad config, a unit that does not load) are the user's to fix: no stack trace.
  if (isRftError(e)) {
    process.stderr.write(`error ${e.code}: ${e.message}\n`);
    process.exit(2);
  }
  throw e;
}
