// `npm run test:quick`: the unit and route tests, in about two minutes on two cores, with no sandbox
// engine, Docker, gVisor, Postgres, Redis or Chromium needed: what .ci/run also runs on the machine's Node
// 20, plus the layering check, the environments, the grading service and formulas, the registry, the
// finqa grader, the tools' libraries and the CLI's pure parts. Left to the full suite
// (`npm test`, about 15 minutes): the route fuzzer, the suites that spawn server processes or need
// containers or Postgres, the sandboxes, MCP bridges, doors other than Agent RFT, and the CLI end to end.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export const QUICK = [
  'test/config.test.ts',
  'test/protocol/**/*.test.ts',
  'test/authentication/**/*.test.ts',
  'test/ledger/**/*.test.ts',
  'test/rollout/**/*.test.ts',
  'test/routes/**/*.test.ts',
  'test/doors/agent-rft/**/*.test.ts',
  'test/http/**/*.test.ts',
  'test/environments/**/*.test.ts',
  'test/harbor/task.test.ts',
  'test/harbor/dataset.test.ts',
  'test/harbor/grader.test.ts',
  'test/grading-service/**/*.test.ts',
  'test/registry/**/*.test.ts',
  'test/layers.test.ts',
  'test/grading/formula.test.ts',
  'test/grading/numbers.test.ts',
  'test/grading/perturb.test.ts',
  'test/grading/template.test.ts',
  'test/grading/helpers.test.ts',
  'test/grading/similarity/similarity.test.ts',
  'test/graders/answer-match.test.ts',
  'test/tools/_lib/**/*.test.ts',
  'test/cli/report/stats.test.ts',
  'test/cli/rollout/progress.test.ts',
  'test/cli/rollout/stopwatch.test.ts',
];

export const SLOW = [
  'test/routes/fuzz.test.ts', // 20 s of fuzzed requests
  'test/http/redis.test.ts', // a Redis container
  'test/ledger/infra-failures.test.ts', // Postgres when DATABASE_URL is set
  'test/http/slow-clients.test.ts', // a server process, slow clients on real sockets
  'test/http/body-too-large.test.ts', // a server process
  'test/http/listener.test.ts', // server processes under a low descriptor limit, idle floods on real sockets
];

export default defineConfig({ ...base, test: { ...base.test, include: QUICK, exclude: SLOW } });
