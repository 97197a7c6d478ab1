import { z } from 'zod';
import { operation } from '../openapi-kit';
import { SCOPES } from '../security/scopes';
import { CreateApiKeyBody, CreateTenantBody } from './tenants';

const Tenant = z.object({ id: z.string(), name: z.string(), partitions: z.number(), createdAt: z.string() });
const ApiKey = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  createdBy: z.string().describe('"admin" or the id of the key that created this one'),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable().describe('Last use, to the minute'),
  revokedAt: z.string().nullable(),
});
const tags = ['tenants'];

export const paths: Record<string, object> = {
  '/tenants': {
    get: operation({
      summary: 'List tenants (a tenant key sees its own)',
      tags,
      ok: { status: 200, description: 'Tenants', schema: z.object({ tenants: z.array(Tenant) }) },
    }),
    post: operation({
      summary: 'Create a tenant (admin)',
      tags,
      body: CreateTenantBody,
      ok: { status: 201, description: 'Created', schema: Tenant },
      errors: [403, 409],
    }),
  },
  '/tenants/{tenant}': {
    get: operation({
      summary: 'Get a tenant by id or name',
      tags,
      params: ['tenant'],
      ok: { status: 200, description: 'Tenant', schema: Tenant },
      errors: [404],
    }),
    delete: operation({
      summary: 'Delete a tenant and all its data (admin; refused while an instance runs)',
      tags,
      params: ['tenant'],
      ok: { status: 204, description: 'Deleted' },
      errors: [403, 404, 409],
    }),
  },
  '/tenants/{tenant}/keys': {
    get: operation({
      summary: 'List API keys (never the secrets)',
      tags,
      params: ['tenant'],
      ok: { status: 200, description: 'Keys', schema: z.object({ keys: z.array(ApiKey) }) },
      errors: [404],
    }),
    post: operation({
      summary: 'Create an API key with scopes (default: ingest); the secret is shown once. A key may only give scopes it has',
      tags,
      params: ['tenant'],
      body: CreateApiKeyBody,
      ok: { status: 201, description: 'Created', schema: ApiKey.extend({ secret: z.string() }) },
      errors: [403, 404],
    }),
  },
  '/tenants/{tenant}/keys/{keyId}': {
    delete: operation({
      summary: 'Revoke an API key and every key it created (directly or through its keys)',
      tags,
      params: ['tenant', 'keyId'],
      ok: { status: 200, description: 'Revoked', schema: ApiKey.extend({ alsoRevoked: z.array(z.string()) }) },
      errors: [404],
    }),
  },
  '/session': {
    post: operation({
      summary: 'Sign the studio in with the admin token (sets a session cookie)',
      description:
        'Failed attempts are throttled: after 10 from one client address, or 100 from all addresses together, within 15 minutes, ' +
        'every attempt they cover (a correct token too) is refused with 429 `rate_limited` and `Retry-After` (seconds). ' +
        'Sign-ins and failed ones are audited with the client address.',
      tags: ['session'],
      body: z.object({ token: z.string() }),
      ok: { status: 200, description: 'Signed in' },
      errors: [429],
    }),
    delete: operation({
      summary: 'Sign out: ends the session on the server and clears the cookie',
      tags: ['session'],
      ok: { status: 200, description: 'Signed out' },
    }),
  },
  '/openapi.json': {
    get: operation({ summary: 'This document', tags: ['meta'], ok: { status: 200, description: 'OpenAPI 3.1 document' } }),
  },
};
