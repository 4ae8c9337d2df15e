// The SandboxFusion door: POST /run_code on the private listener, SandboxFusion's request and reply,
// for verl's code reward (verl/utils/reward_score/sandbox_fusion) and anything else that calls a
// SandboxFusion service (docs/sandbox-fusion.md). Each run is a rollout of its own (door
// `sandbox-fusion`) holding one `run_code` call: the request and the reply, in the record.
import { errors, isRftError } from '../../errors.js';
import { canonicalJson, sha256 } from '../../protocol/canonical.js';
import type { PrivateDoor, PrivateDoorContext } from '../private/door.js';
import { runCodeRequestSchema, type RunCodeRequest } from './request.js';
import { runCode, type RunOutcome } from './run.js';
import { timeOrderedId } from '../../rollout/ids.js';
import { runOfRequest } from '../../protocol/run-label.js';

export const SANDBOX_FUSION_DOOR = 'sandbox-fusion';
const TOOL = 'run_code';

/** Records the run once it has a reply: a run of ours that failed is not the program's, and a retry runs it afresh. */
async function record(ctx: PrivateDoorContext, traceId: string, req: RunCodeRequest, out: RunOutcome, runLabel: string | undefined): Promise<void> {
  const { store } = ctx;
  const args = canonicalJson(req);
  const output = JSON.stringify(out.response);
  const now = Date.now();
  try {
    await store.openRollout(traceId, SANDBOX_FUSION_DOOR, null, ctx.config.toolBudget, now, runLabel);
    await store.beginCall({
      traceId, callId: 'run', tool: TOOL, arguments: args, argsHash: sha256(TOOL, args), cost: 1, budgetLimit: ctx.config.toolBudget,
      item: null, credential: null, now, overBudgetOutput: '',
    });
    const run = out.response.run_result;
    await store.finishCall(traceId, 'run', {
      output,
      status: run?.status === 'TimeLimitExceeded' ? 'timeout' : out.response.status === 'Success' ? 'ok' : 'tool_error',
      finishedAt: Date.now(),
      durationMs: out.durationMs,
      outputBytes: Buffer.byteLength(output),
      truncated: false,
      sandbox: out.sandboxId,
    });
  } catch (e) {
    throw errors.runCodeUnavailable(errors.store.code, `its run could not be recorded: ${(e as Error).message}`);
  }
}

export const sandboxFusionDoor: PrivateDoor = {
  name: SANDBOX_FUSION_DOOR,
  segments: ['run_code'],
  register(app, ctx) {
    const { sandboxes, config } = ctx;
    if (!sandboxes) ctx.log.warn('RFT_SANDBOX=none: POST /run_code answers RFT_ERR_SANDBOX_UNAVAILABLE');
    app.post('/run_code', async (req, reply) => {
      const parsed = runCodeRequestSchema.safeParse(req.body);
      if (!parsed.success) throw errors.badRequest(`not a SandboxFusion run_code request: ${parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')}`);
      // The run: x-rft-run, else ?run= on the URL (verl's client takes a URL and sends no header of ours).
      const runLabel = runOfRequest(req);
      if (!sandboxes) throw errors.sandboxUnavailable('sandboxes are disabled on this server (RFT_SANDBOX=none)');
      const traceId = timeOrderedId('sf_');
      const limits = config.sandbox.limits;
      let out: RunOutcome;
      try {
        out = await runCode({ sandboxes, limits, queueTimeoutMs: config.sandbox.queueTimeoutMs, maxFetchBytes: config.bodyLimitBytes }, traceId, parsed.data);
      } catch (e) {
        if (isRftError(e) && e.code === errors.runCodeUnavailable.code) req.log.warn({ trace_id: traceId, err: e }, 'run_code not run (504)');
        throw e;
      }
      await record(ctx, traceId, parsed.data, out, runLabel);
      const run = out.response.run_result;
      req.log.info({ trace_id: traceId, language: parsed.data.language, status: out.response.status, run_status: run?.status, return_code: run?.return_code }, 'run_code');
      return reply.type('application/json').send(JSON.stringify(out.response));
    });
  },
};
