#!/usr/bin/env node
// rft-endpoints command line: each subcommand lives in its own module and registers itself.
import { Command } from 'commander';

const program = new Command();
program
  .name('rft-endpoints')
  .description('Tool and grader endpoints for Agent RFT, plus local rollouts, replay and grading checks')
  .showHelpAfterError();

// subcommands (one import and one register call per module)

await program.parseAsync(process.argv);
