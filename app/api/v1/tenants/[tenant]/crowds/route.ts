import { crowdView, listCrowds } from '@/server/crowd';
import { json, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json({ crowds: (await listCrowds(database(), tenant.id)).map(crowdView) });
});
