import { countsHistory } from '@/server/engine';
import { CountsHistoryQuery } from '@/server/http/engine-api';
import { json, queryParams } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; iid: string }>(async ({ tenant, request, database, clock }, params) => {
  return json(await countsHistory(database, tenant.id, params.iid, queryParams(request, CountsHistoryQuery), clock.now()));
});
