import { json } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const POST = tenantRoute<{ tenant: string; iid: string }>(async ({ tenant, engine, audit }, params) => {
  const stopping = await engine.stopInstance(tenant.id, params.iid);
  await audit('instance.stop', { target: params.iid });
  return json(stopping, 202);
});
