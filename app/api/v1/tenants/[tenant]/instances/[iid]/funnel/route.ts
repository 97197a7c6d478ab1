import { instanceFunnel } from '@/server/analytics/instance-analytics';
import { FunnelQuery } from '@/server/analytics/openapi';
import { json, queryParams } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; iid: string }>(async ({ tenant, request, database }, params) => {
  return json(await instanceFunnel(database, tenant, params.iid, queryParams(request, FunnelQuery)));
});
