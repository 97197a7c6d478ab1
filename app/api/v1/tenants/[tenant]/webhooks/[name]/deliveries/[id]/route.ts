import { json } from '@/server/http/respond';
import { DeliveryParams, getDelivery } from '@/server/webhooks/deliveries';
import { DestinationParams } from '@/server/webhooks/destinations';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; name: string; id: string }>(async ({ tenant, principal, database }, params) => {
  const { name } = DestinationParams.parse(params);
  return json(await getDelivery(database, tenant.id, name, DeliveryParams.parse(params).id, { admin: principal.kind === 'admin' }));
});
