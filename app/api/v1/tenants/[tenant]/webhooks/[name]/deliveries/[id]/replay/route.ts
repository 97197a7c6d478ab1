import { json } from '@/server/http/respond';
import { DeliveryParams, replayDelivery } from '@/server/webhooks/deliveries';
import { DestinationParams } from '@/server/webhooks/destinations';
import { tenantRoute } from '@/server/http/request-context';

/** 202: the delivery is pending again, same id and body; the runner sends it with fresh retries. */
export const POST = tenantRoute<{ tenant: string; name: string; id: string }>(async ({ tenant, principal, database, runner, env, audit }, params) => {
  const { name } = DestinationParams.parse(params);
  const { id } = DeliveryParams.parse(params);
  const delivery = await replayDelivery(database, runner, tenant.id, name, id, { admin: principal.kind === 'admin' }, env.CROWDFLOW_WEBHOOK_ALLOW_PRIVATE);
  await audit('webhook.replay', { target: `${name}/${id}` });
  return json(delivery, 202);
});
