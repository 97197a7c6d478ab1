import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { getProcedureRunner } from '@/server/procedures/runner';
import { audit } from '@/server/security/audit';
import { findTenant } from '@/server/tenants/tenants';
import { DeliveryParams, replayDelivery } from '@/server/webhooks/deliveries';
import { DestinationParams } from '@/server/webhooks/destinations';
import { database } from '@/server/storage/database';

/** 202: the delivery is pending again, same id and body; the runner sends it with fresh retries. */
export const POST = route<{ tenant: string; name: string; id: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const { name } = DestinationParams.parse(params);
  const { id } = DeliveryParams.parse(params);
  const delivery = await replayDelivery(database(), getProcedureRunner(), tenant.id, name, id, { admin: principal.kind === 'admin' });
  await audit(database(), principal, 'webhook.replay', { tenantId: tenant.id, target: `${name}/${id}` });
  return json(delivery, 202);
});
