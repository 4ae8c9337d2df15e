// A failure's details (assertion, diff, code frame) as soon as its test file finishes, not only in the
// summary at the end of the run: the full suite takes about 15 minutes, and the default reporter prints
// just the failing test's name when its file ends. Added after the default reporter (vitest.config.ts).
import { relative } from 'node:path';
import type { Reporter, TestModule, Vitest } from 'vitest/node';

export default class FailuresNow implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestModuleEnd(module: TestModule): void {
    const logger = this.vitest?.logger;
    if (!logger || module.state() !== 'failed') return;
    const file = relative(this.vitest!.config.root, module.moduleId);
    for (const e of module.errors()) {
      logger.error(`\nFAIL ${file} (the file itself: an import, a hook)`);
      logger.printError(e, { project: module.project });
    }
    for (const test of module.children.allTests('failed')) {
      logger.error(`\nFAIL ${file} > ${test.fullName}`);
      for (const e of test.result().errors ?? []) logger.printError(e, { project: module.project, showCodeFrame: true });
    }
  }
}
