import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Units import this package by name ('rft-endpoints', 'rft-endpoints/grading'); the rft-source
  // condition of package.json's exports resolves those to src/*.ts, as tsx and tsc do here.
  ssr: { resolve: { conditions: ['rft-source', ...defaultServerConditions] } },
  test: {
    include: ['test/**/*.test.ts'],
    // The default reporter names a failing test when its file ends but gives the details only at the end
    // of the run; failures-now prints them when the file ends too (a full run takes about 15 minutes).
    reporters: ['default', './test/runner/failures-now.ts'],
    // The run's id (its containers' label) and the removal of what it left (test/global-setup.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Integration suites start servers, sandboxes and containers; two cores, so keep parallelism modest.
    maxWorkers: 2,
  },
});
