// The API reference: OpenAPI 3 at GET /openapi.json, built by @fastify/swagger from each route's zod
// schemas (the type provider's jsonSchemaTransform), and browsable at /docs (Swagger UI, served from
// node_modules: nothing from the network). Both are public, like the dashboard's page: they describe
// the API and hold no data. Registered before the routes, so it sees every one of them.
import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform } from '@fastify/type-provider-zod';
import { describeKeyHeaders } from '../authentication/key-headers.js';

const MCP_DESCRIPTION =
  'MCP over Streamable HTTP (JSON-RPC 2.0): the server\'s tools to MCP clients, through the same ledger. POST carries a ' +
  'JSON-RPC message (or batch) and is answered with JSON or an event stream; GET opens a server-sent event stream; ' +
  'DELETE ends a session. `x-rft-trace-id` names the rollout. See docs/mcp.md.';

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  const { auth } = app.rft;
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'rft-endpoints',
        version: '0.1.0',
        description:
          'Tool endpoint and reward grader endpoint for Agent RFT. Every route but the public ones (health, the ' +
          `dashboard's page, this reference) needs a credential: ${describeKeyHeaders(auth.keyHeaders)} or a Standard Webhooks signature. Errors are ` +
          '`{"error": {"code": "RFT_ERR_...", "message": "...", "details": {...}}}` with a stable code.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: `an API key: ${describeKeyHeaders(auth.keyHeaders)}` },
          webhookSignature: {
            type: 'apiKey',
            in: 'header',
            name: 'webhook-signature',
            description: 'a Standard Webhooks signature (with webhook-id and webhook-timestamp) over the raw body',
          },
        },
      },
      security: [{ apiKey: [] }, { webhookSignature: [] }],
    },
    transform: (doc) => {
      const out = jsonSchemaTransform(doc) as { schema: Record<string, unknown>; url: string };
      const route = doc.route as { config?: { public?: boolean } } | undefined;
      const schema: Record<string, unknown> = { ...out.schema };
      if (route?.config?.public) schema.security = [];
      if (doc.url === '/mcp') {
        schema.summary = 'MCP (Streamable HTTP, JSON-RPC 2.0)';
        schema.description = MCP_DESCRIPTION;
      }
      return { ...out, schema };
    },
  });

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());

  // Swagger UI's own routes (page, assets) are made public the same way as /openapi.json.
  await app.register(async (docs) => {
    docs.addHook('onRoute', (r) => {
      r.config = { ...r.config, public: true };
    });
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      // No badge from validator.swagger.io: the page loads nothing from the network.
      uiConfig: { validatorUrl: null, deepLinking: true, defaultModelsExpandDepth: 0 },
      staticCSP: "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
    });
  });
}
