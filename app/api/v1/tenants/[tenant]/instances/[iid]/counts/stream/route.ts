import { getEngine } from '@/server/engine';
import { countsEventStream } from '@/server/http/counts-stream';
import { route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string; iid: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  await getEngine().getCounts(tenant.id, params.iid); // an unknown instance is a 404 before the stream opens
  return countsEventStream(request, tenant.id, params.iid);
});
