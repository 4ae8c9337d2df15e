// `rft-endpoints job body`: the whole fine-tuning job request, for OpenAI and for Azure AI Foundry, as
// the running server builds it from its tools, its grader and the project's job.json (GET /v1/job-body).
import type { Command } from 'commander';
import { withServerOptions, type ServerOptions } from './server-options.js';

interface JobBodyOptions extends ServerOptions {
  baseUrl?: string;
  grader?: string;
  tools?: string;
  for?: string;
  json?: boolean;
}

interface JobRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

const TARGETS = { openai: 'OpenAI', azure: 'Azure AI Foundry' } as const;
type Target = keyof typeof TARGETS;

export function register(program: Command): void {
  const job = program.command('job').description('the fine-tuning job that uses this server');
  withServerOptions(
    job
      .command('body')
      .description("print the full job request (OpenAI and Azure AI Foundry) from the server's tools and grader and the project's job.json")
      .option('--base-url <url>', 'the public HTTPS address the trainer reaches this server at (default: the --server address)')
      .option('--grader <name>', 'the grader (default: the one behind POST /grade)')
      .option('--tools <names>', 'comma-separated tool names (default: all)')
      .option('--for <target>', 'only one request: openai or azure')
      .option('--json', 'print the server reply as JSON'),
  ).action(async (opts: JobBodyOptions) => {
    const { errors } = await import('../errors.js');
    if (opts.for !== undefined && !(opts.for in TARGETS)) throw errors.cliUsage(`--for must be openai or azure, not "${opts.for}"`);
    const server = (await import('./rollout/http.js')).clientFrom(opts);
    try {
      const q = new URLSearchParams();
      if (opts.baseUrl) q.set('base_url', opts.baseUrl);
      if (opts.grader) q.set('grader', opts.grader);
      if (opts.tools) q.set('tools', opts.tools);
      const reply = await server.json<Record<Target, JobRequest>>('GET', `/v1/job-body${q.size ? `?${q}` : ''}`);
      const targets = (opts.for ? [opts.for] : Object.keys(TARGETS)) as Target[];
      if (opts.json) {
        process.stdout.write(JSON.stringify(Object.fromEntries(targets.map((t) => [t, reply[t]])), null, 2) + '\n');
        return;
      }
      process.stdout.write(targets.map((t) => render(TARGETS[t], reply[t])).join('\n'));
    } finally {
      await server.close();
    }
  });
}

/** One request as HTTP: the line, the headers, the JSON body. */
function render(title: string, r: JobRequest): string {
  const headers = Object.entries(r.headers).map(([k, v]) => `${k}: ${v}\n`).join('');
  return `# ${title} (replace the <...> placeholders: the uploaded files' ids, the keys)\n${r.method} ${r.url}\n${headers}\n${JSON.stringify(r.body, null, 2)}\n`;
}
