import { getEngine } from '@/server/engine';
import { UserParams } from '@/server/http/engine-api';
import { json, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string; user: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { user } = UserParams.parse({ user: params.user });
  return json(await getEngine().whereIsUser(tenant.id, user));
});
