import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Integration suites start servers, sandboxes and containers; two cores, so keep parallelism modest.
    maxWorkers: 2,
  },
});
