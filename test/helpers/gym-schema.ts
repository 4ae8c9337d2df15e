// What NeMo Gym accepts as a row's `responses_create_params`, as its pydantic models validate it
// (NVIDIA-NeMo/Gym 07d6b0d, nemo_gym/openai_utils.py): NeMoGymResponseCreateParamsNonStreaming
// (extra="forbid"), its input items (NeMoGymEasyInputMessage, NeMoGymResponseFunctionToolCall,
// NeMoGymFunctionCallOutput) and the openai SDK's FunctionToolParam (name, parameters, strict and
// type required; description optional). Only the members a converted Agent RFT row can produce.
import { z } from 'zod';

const inputText = z.strictObject({ type: z.literal('input_text'), text: z.string() });
const inputImage = z.strictObject({ type: z.literal('input_image'), image_url: z.string(), detail: z.enum(['low', 'high', 'auto']) });

const easyInputMessage = z.strictObject({
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(z.union([inputText, inputImage]))]),
  type: z.literal('message').optional(),
});
const functionCall = z.strictObject({ type: z.literal('function_call'), call_id: z.string(), name: z.string(), arguments: z.string() });
const functionCallOutput = z.strictObject({ type: z.literal('function_call_output'), call_id: z.string(), output: z.string() });

export const gymFunctionTool = z.strictObject({
  type: z.literal('function'),
  name: z.string().min(1),
  description: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable(),
  strict: z.boolean().nullable(),
});

const KEYS = [
  'background', 'include', 'input', 'instructions', 'max_output_tokens', 'max_tool_calls', 'metadata', 'model',
  'parallel_tool_calls', 'previous_response_id', 'prompt', 'reasoning', 'service_tier', 'store', 'temperature', 'text',
  'tool_choice', 'tools', 'top_logprobs', 'top_p', 'truncation', 'user', 'stream',
] as const;

export const gymResponsesCreateParams = z
  .looseObject({
    input: z.union([z.string(), z.array(z.union([easyInputMessage, functionCall, functionCallOutput]))]),
    tools: z.array(gymFunctionTool).optional(),
  })
  .refine((p) => Object.keys(p).every((k) => (KEYS as readonly string[]).includes(k)), { message: 'extra="forbid": a key Gym does not know' });

/** A Gym dataset row: `responses_create_params` plus any extra field (BaseRunRequest allows them). */
export const gymRow = z.looseObject({ responses_create_params: gymResponsesCreateParams });
