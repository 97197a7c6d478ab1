import { countsEventStream } from '@/server/http/counts-stream';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; iid: string }>(async (caller, params) => {
  const { tenant, engine } = caller;
  await engine.getCounts(tenant.id, params.iid); // an unknown instance is a 404 before the stream opens
  return countsEventStream(caller, tenant.id, params.iid);
});
