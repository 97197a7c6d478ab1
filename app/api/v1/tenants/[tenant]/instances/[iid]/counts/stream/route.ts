import { countsEventStream } from '@/server/http/counts-stream';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; iid: string }>(async ({ tenant, request, engine }, params) => {
  await engine.getCounts(tenant.id, params.iid); // an unknown instance is a 404 before the stream opens
  return countsEventStream(request, tenant.id, params.iid);
});
