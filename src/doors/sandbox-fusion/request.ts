// SandboxFusion's /run_code request and reply (bytedance/SandboxFusion sandbox/server/sandbox_api.py
// RunCodeRequest, RunCodeResponse; sandbox/runners/types.py), as verl's reward function sends and
// reads them (verl/utils/reward_score/sandbox_fusion/utils.py call_sandbox_api).
import { z } from 'zod';

/** SandboxFusion's Language literal: a request naming anything else is malformed. */
export const SANDBOX_FUSION_LANGUAGES = [
  'python', 'cpp', 'nodejs', 'go', 'go_test', 'java', 'php', 'csharp', 'bash', 'typescript', 'sql', 'rust', 'cuda', 'lua', 'R', 'perl',
  'D_ut', 'ruby', 'scala', 'julia', 'pytest', 'junit', 'kotlin_script', 'jest', 'verilog', 'python_gpu', 'lean', 'swift', 'racket',
] as const;

/** The languages run here: interpreters the sandbox image (and a bwrap or process host) has; the program file and its command. */
export const RUNNERS: Partial<Record<(typeof SANDBOX_FUSION_LANGUAGES)[number], { file: string; argv: string[] }>> = {
  python: { file: 'run_code_main.py', argv: ['python3', 'run_code_main.py'] },
  nodejs: { file: 'run_code_main.js', argv: ['node', 'run_code_main.js'] },
  bash: { file: 'run_code_main.sh', argv: ['bash', 'run_code_main.sh'] },
  perl: { file: 'run_code_main.pl', argv: ['perl', 'run_code_main.pl'] },
};

/** Its defaults are SandboxFusion's (pydantic: extra fields ignored, numbers as floats). */
export const runCodeRequestSchema = z.looseObject({
  compile_timeout: z.number().min(0).default(10),
  run_timeout: z.number().min(0).default(10),
  memory_limit_MB: z.number().int().default(-1),
  code: z.string(),
  stdin: z.string().nullish(),
  language: z.enum(SANDBOX_FUSION_LANGUAGES),
  /** Path -> base64 content (null: skipped, as SandboxFusion's restore_files does). */
  files: z.record(z.string(), z.string().nullable()).default({}),
  fetch_files: z.array(z.string()).default([]),
});
export type RunCodeRequest = z.infer<typeof runCodeRequestSchema>;

/** CommandRunResult: `TimeLimitExceeded` has no return code; `Error` means the command could not be run. */
export interface CommandRunResult {
  status: 'Finished' | 'Error' | 'TimeLimitExceeded';
  execution_time: number | null;
  return_code: number | null;
  stdout: string | null;
  stderr: string | null;
}

/** RunCodeResponse: `Failed` on a time limit or a non-zero exit, `SandboxError` when a phase could not run. */
export interface RunCodeResponse {
  status: 'Success' | 'Failed' | 'SandboxError';
  message: string;
  compile_result: CommandRunResult | null;
  run_result: CommandRunResult | null;
  executor_pod_name: string | null;
  files: Record<string, string>;
}
