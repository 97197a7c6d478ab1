import { recentEventTypes } from '@/server/engine';
import { EventTypesQuery } from '@/server/http/engine-api';
import { json, queryParams } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

/** Event types seen recently in the tenant's log, with counts (the studio's event-type chooser). */
export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, request, database }) => {
  queryParams(request, EventTypesQuery);
  return json(await recentEventTypes(database, tenant.id, tenant.partitions));
});
