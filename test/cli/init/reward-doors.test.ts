// The new project's README names the reward and SandboxFusion doors' routes as they are served.
import { expect, it } from 'vitest';
import { PRIVATE_PORT, rewardDoorsSection } from '../../../src/cli/init/reward-doors.js';
import { rewardDoor } from '../../../src/doors/reward/door.js';
import { sandboxFusionDoor } from '../../../src/doors/sandbox-fusion/door.js';

it("gives slime, OpenRLHF and verl the private listener's routes", () => {
  const text = rewardDoorsSection('answer_match');
  const base = `http://127.0.0.1:${PRIVATE_PORT}`;
  expect(text).toContain(`RFT_PRIVATE_PORT=${PRIVATE_PORT} npm start`);
  expect(text).toContain(`--rm-url ${base}/${rewardDoor.segments[0]}/answer_match`);
  expect(text).toContain(`--reward.remote_url ${base}/${rewardDoor.segments[0]}/answer_match`);
  expect(text).toContain(`reward_model.sandbox_fusion.url=${base}/${sandboxFusionDoor.segments[0]}`);
});
