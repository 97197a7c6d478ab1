import { recentEventTypes } from '@/server/engine';
import { EventTypesQuery } from '@/server/http/engine-api';
import { json, queryParams, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

/** Event types seen recently in the tenant's log, with counts (the studio's event-type chooser). */
export const GET = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  queryParams(request, EventTypesQuery);
  return json(await recentEventTypes(database(), tenant.id, tenant.partitions));
});
