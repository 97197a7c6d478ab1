import { json, queryParams } from '@/server/http/respond';
import { DeliveryListQuery, listDeliveries } from '@/server/webhooks/deliveries';
import { DestinationParams } from '@/server/webhooks/destinations';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; name: string }>(async ({ tenant, request, principal, database }, params) => {
  const query = queryParams(request, DeliveryListQuery);
  return json(await listDeliveries(database, tenant.id, DestinationParams.parse(params).name, query, { admin: principal.kind === 'admin' }));
});
