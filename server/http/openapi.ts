import { paths as crowdPaths } from '../crowd/openapi';
import { paths as costPaths } from './cost-api';
import { paths as enginePaths } from './engine-api';
import { paths as notificationPaths } from '../notifications/openapi';
import { paths as procedurePaths } from '../procedures/openapi';
import { paths as profilePaths } from '../profiles/openapi';
import { paths as securityPaths } from '../security/openapi';
import { paths as tenantPaths } from '../tenants/openapi';
import { paths as workflowPaths } from '../workflows/openapi';
import { requiredScope, SCOPE_MEANING } from '../security/scopes';

// Every area documents its own routes; this merges them into one OpenAPI 3.1 document.
const areas: Record<string, object>[] = [tenantPaths, crowdPaths, profilePaths, workflowPaths, enginePaths, notificationPaths, procedurePaths, costPaths, securityPaths];

const PUBLIC_PATHS = new Set(['/session', '/openapi.json']);

/** Marks each operation with what an API key needs for it (`x-required-scope`), from the function that enforces it. */
function withScopes(path: string, item: object): object {
  if (PUBLIC_PATHS.has(path)) return item;
  return Object.fromEntries(
    Object.entries(item).map(([method, op]) => {
      const needed = requiredScope(method.toUpperCase(), path);
      const note = needed === 'admin' ? 'Admin only.' : needed === 'any' ? 'Any API key of the tenant.' : `API keys need the \`${needed}\` scope.`;
      const description = [(op as { description?: string }).description, note].filter(Boolean).join(' ');
      const refused = { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
      // Every authenticated call may be refused for a missing scope (403) or the key's rate limit (429, Retry-After).
      const responses = { 403: refused, 429: refused, ...(op as { responses?: object }).responses };
      return [method, { ...op, description, responses, 'x-required-scope': needed }];
    }),
  );
}

export function openApiDocument(): object {
  const paths: Record<string, object> = {};
  for (const area of areas) {
    for (const [path, item] of Object.entries(area)) paths[path] = { ...(paths[path] ?? {}), ...withScopes(path, item) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Crowdflow API',
      version: '1',
      description: `Journeys over very large crowds. Authenticate with \`Authorization: Bearer <admin token or tenant API key>\`. API key scopes (each operation's \`x-required-scope\`): ${Object.entries(SCOPE_MEANING).map(([scope, meaning]) => `\`${scope}\`: ${meaning}`).join('; ')}.`,
    },
    servers: [{ url: '/api/v1' }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} } } },
        },
      },
    },
    paths,
  };
}
