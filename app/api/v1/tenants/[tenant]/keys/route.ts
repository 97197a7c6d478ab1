import { authenticate } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';
import { createApiKey, CreateApiKeyBody, findTenant, listApiKeys, tenantFromRequest } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string }>(async (request, { tenant }) => json({ keys: await listApiKeys(await tenantFromRequest(request, tenant)) }));

export const POST = route<{ tenant: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(principal, params.tenant);
  const body = await readJson(request, CreateApiKeyBody);
  return json(await createApiKey(tenant, principal, body), 201);
});
