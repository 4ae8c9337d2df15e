#!/usr/bin/env node
// rft-endpoints command line: each subcommand lives in its own module and registers itself. Those
// modules import only what declaring their options needs; the work (server, HTTP client, model
// client) is imported when the command runs, so `--help` and `--version` answer at once.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { isRftError } from '../errors.js';
import { codedSystemError, EXIT, exitStatusOf } from './exit-codes.js';
import { unknownOptionError } from './unknown-option.js';
import { register as registerServe } from './serve.js';
import { register as registerInit } from './init/command.js';
import { register as registerDataset } from './dataset/command.js';
import { register as registerKeys } from './keys.js';
import { register as registerRollout } from './rollout/command.js';
import { register as registerReport } from './report/command.js';
import { register as registerReplay } from './replay/command.js';
import { register as registerExportImport } from './export-import.js';
import { register as registerRegrade } from './regrade.js';
import { register as registerCheckGrader } from './check-grader.js';
import { register as registerJob } from './job.js';
import { register as registerHarbor } from './harbor.js';

function packageVersion(): string {
  const file = fileURLToPath(import.meta.resolve('rft-endpoints/package.json'));
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

function fail(code: string, message: string, status: number): never {
  process.stderr.write(`error ${code}: ${message}\n`);
  process.exit(status);
}

const program = new Command();
program
  .name('rft-endpoints')
  .description('Tool and grader endpoints for Agent RFT, plus local rollouts, replay and grading checks')
  .version(packageVersion(), '-V, --version')
  // Usage errors come back here (below) as one coded line; subcommands inherit these settings.
  .exitOverride()
  .configureOutput({ outputError: () => {} })
  .showHelpAfterError('(add --help for usage)');

// subcommands (one import and one register call per module)
registerServe(program);
registerInit(program);
registerDataset(program);
registerKeys(program);
registerRollout(program);
registerReport(program);
registerReplay(program);
registerExportImport(program);
registerRegrade(program);
registerCheckGrader(program);
registerJob(program);
registerHarbor(program);

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (e instanceof CommanderError) {
    // --help and --version end here too, with status 0.
    if (e.exitCode === 0) process.exit(0);
    const usage = e.code === 'commander.missingMandatoryOptionValue' ? (unknownOptionError(program, process.argv.slice(2)) ?? e) : e;
    // One line: commander puts its "(Did you mean --x?)" on a line of its own.
    fail('RFT_ERR_CLI_USAGE', usage.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' '), EXIT.usage);
  }
  // Coded errors (bad config, server down, bad key, a missing file) are the user's to fix: one line, no stack trace.
  const coded = isRftError(e) ? e : codedSystemError(e);
  if (coded) fail(coded.code, coded.message, exitStatusOf(coded));
  // Anything else is a bug: say so on the first line, keep the stack for the report.
  process.stderr.write(`error RFT_ERR_INTERNAL: ${e instanceof Error ? e.message : String(e)} (an rft-endpoints bug; details follow)\n`);
  if (e instanceof Error && e.stack) process.stderr.write(e.stack + '\n');
  process.exit(EXIT.internal);
}
