import { json, route } from '@/server/http/respond';
import { revokeApiKey, tenantFromRequest } from '@/server/tenants/tenants';

export const DELETE = route<{ tenant: string; keyId: string }>(async (request, params) =>
  json(await revokeApiKey(await tenantFromRequest(request, params.tenant), params.keyId)),
);
