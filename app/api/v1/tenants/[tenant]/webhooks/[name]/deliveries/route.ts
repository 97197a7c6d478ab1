import { authenticate } from '@/server/auth';
import { json, queryParams, route } from '@/server/http/respond';
import { findTenant } from '@/server/tenants/tenants';
import { DeliveryListQuery, listDeliveries } from '@/server/webhooks/deliveries';
import { DestinationParams } from '@/server/webhooks/destinations';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string; name: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const query = queryParams(request, DeliveryListQuery);
  return json(await listDeliveries(database(), tenant.id, DestinationParams.parse(params).name, query, { admin: principal.kind === 'admin' }));
});
