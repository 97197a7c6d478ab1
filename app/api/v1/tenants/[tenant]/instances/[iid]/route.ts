import { json } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; iid: string }>(async ({ tenant, engine }, params) => {
  return json(await engine.getInstance(tenant.id, params.iid));
});
