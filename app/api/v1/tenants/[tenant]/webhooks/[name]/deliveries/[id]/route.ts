import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { findTenant } from '@/server/tenants/tenants';
import { DeliveryParams, getDelivery } from '@/server/webhooks/deliveries';
import { DestinationParams } from '@/server/webhooks/destinations';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string; name: string; id: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const { name } = DestinationParams.parse(params);
  return json(await getDelivery(database(), tenant.id, name, DeliveryParams.parse(params).id, { admin: principal.kind === 'admin' }));
});
