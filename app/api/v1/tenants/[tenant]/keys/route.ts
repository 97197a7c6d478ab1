import { authenticate } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { createApiKey, CreateApiKeyBody, findTenant, listApiKeys, tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string }>(async (request, { tenant }) =>
  json({ keys: await listApiKeys(database(), await tenantFromRequest(request, tenant)) }),
);

export const POST = route<{ tenant: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const body = await readJson(request, CreateApiKeyBody);
  const { secret, ...key } = await createApiKey(database(), tenant, principal, body);
  await audit(database(), principal, 'key.create', { tenantId: tenant.id, target: key.id, details: { name: key.name, scopes: key.scopes } });
  return json({ ...key, secret }, 201);
});
