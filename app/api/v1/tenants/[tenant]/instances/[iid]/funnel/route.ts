import { instanceFunnel } from '@/server/analytics/instance-analytics';
import { FunnelQuery } from '@/server/analytics/openapi';
import { json, queryParams, route } from '@/server/http/respond';
import { database } from '@/server/storage/database';
import { tenantFromRequest } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string; iid: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await instanceFunnel(database(), tenant, params.iid, queryParams(request, FunnelQuery)));
});
