import { instancePaths } from '@/server/analytics/instance-analytics';
import { PathsQuery } from '@/server/analytics/openapi';
import { json, queryParams } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; iid: string }>(async ({ tenant, request, database }, params) => {
  return json(await instancePaths(database, tenant, params.iid, queryParams(request, PathsQuery)));
});
