import { paths as analyticsPaths } from '../analytics/openapi';
import { paths as crowdPaths } from './crowd-openapi';
import { paths as costPaths } from './cost-api';
import { paths as enginePaths } from './engine-api';
import { paths as experimentPaths } from './experiment-api';
import { paths as notificationPaths } from '../notifications/openapi';
import { paths as procedurePaths } from '../procedures/openapi';
import { paths as profilePaths } from '../profiles/openapi';
import { paths as securityPaths } from '../security/openapi';
import { paths as tenantPaths } from '../tenants/openapi';
import { paths as webhookPaths } from '../webhooks/openapi';
import { paths as workflowPaths } from '../workflows/openapi';
import { paths as previewPaths } from '../workflows/preview-path';
import { requiredScope, SCOPE_MEANING } from '../security/scopes';

// Every area documents its own routes; this merges them into one OpenAPI 3.1 document.
const areas: Record<string, object>[] = [
  tenantPaths,
  crowdPaths,
  profilePaths,
  workflowPaths,
  previewPaths,
  enginePaths,
  experimentPaths,
  analyticsPaths,
  notificationPaths,
  procedurePaths,
  costPaths,
  securityPaths,
  webhookPaths,
];

const PUBLIC_PATHS: ReadonlySet<string> = new Set(['/session', '/openapi.json']);

/**
 * What each path parameter names, by the collection segment before it. The one rule: a resource with a name unique
 * in its scope (tenant, workflow) is addressed by its id or its name (an id wins over a name equal to it); a
 * crowd, consumer or webhook destination only has its name; everything else only has an id.
 */
export const PATH_PARAMETERS: Record<string, string> = {
  'tenants/{tenant}': 'Tenant id or name',
  'workflows/{id}': 'Workflow id or name',
  'crowds/{name}': 'Crowd name (a crowd has no other id)',
  'consumers/{name}': 'Consumer name (a consumer has no other id)',
  'instances/{iid}': 'Instance id (instances have no name)',
  'steps/{step}': "Step name in the instance's workflow version",
  'experiments/{step}': "Name of a split step run as an experiment in the instance's workflow version",
  'versions/{version}': 'Workflow version number: 1, 2, …',
  'users/{user}': 'User id, a whole number from 0 to 4294967295',
  'profiles/{user}': 'User id, a whole number from 0 to 4294967295',
  'keys/{keyId}': 'API key id (key names need not be unique, so keys are addressed by id)',
  'procedures/{id}': 'Procedure id (procedures have no name)',
  'dead-letters/{id}': 'Dead-letter id',
  'webhooks/{name}': 'Webhook destination name (a destination has no other id)',
  'frequency-caps/{name}': 'Frequency cap name (a cap has no other id)',
  'deliveries/{id}': 'Delivery id, as in the Crowdflow-Delivery-Id header (deliveries have no name)',
};

/** Describes each path parameter of the operations of `path` from PATH_PARAMETERS. */
function withParameterDescriptions(path: string, item: object): object {
  const segments = path.split('/');
  const described = (parameter: { name: string; in: string }) => {
    if (parameter.in !== 'path') return parameter;
    const at = segments.indexOf(`{${parameter.name}}`);
    const description = PATH_PARAMETERS[`${segments[at - 1]}/{${parameter.name}}`];
    return description ? { ...parameter, description } : parameter;
  };
  return Object.fromEntries(
    Object.entries(item).map(([method, op]) => {
      const parameters = (op as { parameters?: { name: string; in: string }[] }).parameters;
      return [method, parameters ? { ...op, parameters: parameters.map(described) } : op];
    }),
  );
}

/** Marks each operation with what an API key needs for it (`x-required-scope`), from the function that enforces it. */
function withScopes(path: string, item: object): object {
  if (PUBLIC_PATHS.has(path)) return item;
  return Object.fromEntries(
    Object.entries(item).map(([method, op]) => {
      const needed = requiredScope(method.toUpperCase(), path);
      const note = needed === 'admin' ? 'Admin only.' : needed === 'any' ? 'Any API key of the tenant.' : `API keys need the \`${needed}\` scope.`;
      const description = [(op as { description?: string }).description, note].filter(Boolean).join(' ');
      const refused = { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
      // Every authenticated call may be refused for a missing scope (403), the key's rate limit (429, Retry-After) or a
      // database busy past the request's wait (503 `unavailable`, Retry-After).
      const responses = { 403: refused, 429: refused, 503: refused, ...(op as { responses?: object }).responses };
      return [method, { ...op, description, responses, 'x-required-scope': needed }];
    }),
  );
}

export function openApiDocument(): object {
  const paths: Record<string, object> = {};
  for (const area of areas) {
    for (const [path, item] of Object.entries(area)) paths[path] = { ...(paths[path] ?? {}), ...withScopes(path, withParameterDescriptions(path, item)) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Crowdflow API',
      version: '1',
      description:
        'Journeys over very large crowds. Authenticate with `Authorization: Bearer <admin token or tenant API key>`. Path parameters: tenants and ' +
        'workflows are addressed by id or name, crowds, consumers and webhook destinations by name, everything else by id (each parameter says which). ' +
        `API key scopes (each operation's \`x-required-scope\`): ${Object.entries(SCOPE_MEANING)
          .map(([scope, meaning]) => `\`${scope}\`: ${meaning}`)
          .join('; ')}.`,
    },
    servers: [{ url: '/api/v1' }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: {
                code: { type: 'string', description: 'Stable machine-readable code; each code has one HTTP status' },
                message: { type: 'string', description: 'What is wrong and where, in words' },
                details: {
                  type: 'object',
                  description:
                    'Present when there is more to say, always an object. `path` says where the (first) problem is; `problems` lists every problem ' +
                    'when a request has several; any other field quantifies the problem and is named by the operation (e.g. `retryAfterSeconds` with ' +
                    '429/503, `stranded` with a version update 409, `excludedCount` with a start 422, `instanceId` and `state` with a 409 about an instance).',
                  properties: {
                    path: {
                      type: 'string',
                      description:
                        'Where the problem is: a JSON body field (`events[17].user`, `mapping.old`), a header (`Idempotency-Key`), a query or path ' +
                        'parameter (`limit`), an element of a JSON upload (`[2]`) or a line of a text upload or import (`line 3`); "" for the body as a whole',
                    },
                    problems: {
                      type: 'array',
                      description:
                        'Every problem: `{path, message}` for a body that fails validation; `{step, code, message}` for a workflow (`invalid_workflow`, step null for the workflow as a whole)',
                      items: {
                        type: 'object',
                        properties: { path: { type: 'string' }, step: { type: ['string', 'null'] }, code: { type: 'string' }, message: { type: 'string' } },
                        required: ['message'],
                      },
                    },
                  },
                  additionalProperties: true,
                },
              },
            },
          },
        },
      },
    },
    paths,
  };
}
