import { json, queryParams, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { DeliveryListQuery, listDeliveries } from '@/server/webhooks/deliveries';
import { DestinationParams } from '@/server/webhooks/destinations';

export const GET = route<{ tenant: string; name: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await listDeliveries(tenant.id, DestinationParams.parse(params).name, queryParams(request, DeliveryListQuery)));
});
