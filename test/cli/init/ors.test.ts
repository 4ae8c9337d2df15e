// The init'ed project's README section for the ORS door: TRL's OpenRewardSpec (trl/experimental/openreward/
// _spec.py: target URL, env_name, split) and the openreward SDK's single-host URLs (OPENREWARD_API_URL,
// OPENREWARD_SESSION_URL, TRL's docs/source/openreward.md), naming the environment as the door serves the
// project: after its folder (src/environments/load.ts). SkyRL's part: its own dataset script and launcher
// (examples/train_integrations/openreward/{prepare_tasks.py,run_openreward.sh}) with the upload off, since
// its entry point defaults OPENREWARD_UPLOAD_ROLLOUT to true; ROLL's: the env_type and env_config keys its
// openreward_env.py takes.
import { describe, expect, it } from 'vitest';
import { projectFiles } from '../../../src/cli/init/templates.js';
import { EXAMPLES } from '../../../src/cli/init/examples.js';

describe('init README: the ORS door', () => {
  it("names the project's environment and gives TRL's, SkyRL's and ROLL's settings", () => {
    const readme = projectFiles({ name: 'research', dir: '/srv/research', example: 'finqa', spec: EXAMPLES.finqa, dependency: '^1.0.0', maxSteps: 10, tools: [] })['README.md']!;
    expect(readme).toContain('## Train with TRL (OpenReward), SkyRL or ROLL');
    expect(readme).toContain('OpenRewardSpec("http://127.0.0.1:8787", env_name="research", split="train")');
    expect(readme).toContain('OPENREWARD_API_URL=http://127.0.0.1:8787 OPENREWARD_SESSION_URL=http://127.0.0.1:8787');
    expect(readme).toContain('prepare_tasks.py --env research --split train');
    expect(readme).toContain('OPENREWARD_UPLOAD_ROLLOUT=false');
    expect(readme).toMatch(/env_type: "openreward_env"[\s\S]*environment_name: "research"[\s\S]*split: "train"/);
    // The YAML's own interpolations reach the README as written, not as template holes.
    expect(readme).toContain('max_steps: ${max_actions_per_traj}');
  });
});
