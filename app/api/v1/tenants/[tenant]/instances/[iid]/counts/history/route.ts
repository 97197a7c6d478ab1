import { countsHistory } from '@/server/engine';
import { CountsHistoryQuery } from '@/server/http/engine-api';
import { json, queryParams, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string; iid: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await countsHistory(database(), tenant.id, params.iid, queryParams(request, CountsHistoryQuery)));
});
