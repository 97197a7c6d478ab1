import { getEngine } from '@/server/engine';
import { StartInstanceBody } from '@/server/http/engine-api';
import { json, readJson, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

export const POST = route<{ tenant: string; id: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const body = await readJson(request, StartInstanceBody);
  return json(await getEngine().startInstance(tenant.id, params.id, body), 202);
});
