import { paths as crowdPaths } from '../crowd/openapi';
import { paths as enginePaths } from '../engine/openapi';
import { paths as procedurePaths } from '../procedures/openapi';
import { paths as profilePaths } from '../profiles/openapi';
import { paths as tenantPaths } from '../tenants/openapi';
import { paths as workflowPaths } from '../workflows/openapi';

// Every area documents its own routes; this merges them into one OpenAPI 3.1 document.
const areas: Record<string, object>[] = [tenantPaths, crowdPaths, profilePaths, workflowPaths, enginePaths, procedurePaths];

export function openApiDocument(): object {
  const paths: Record<string, object> = {};
  for (const area of areas) {
    for (const [path, item] of Object.entries(area)) paths[path] = { ...(paths[path] ?? {}), ...item };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Crowdflow API', version: '1', description: 'Journeys over very large crowds. Authenticate with `Authorization: Bearer <admin token or tenant API key>`.' },
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
