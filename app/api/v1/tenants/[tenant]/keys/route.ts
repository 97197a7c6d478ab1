import { json, readJson, route } from '@/server/http/respond';
import { createApiKey, CreateApiKeyBody, listApiKeys, tenantFromRequest } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string }>(async (request, { tenant }) => json({ keys: await listApiKeys(await tenantFromRequest(request, tenant)) }));

export const POST = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const body = await readJson(request, CreateApiKeyBody);
  return json(await createApiKey(tenant, body.name), 201);
});
