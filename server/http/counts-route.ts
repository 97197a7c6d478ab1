import { getEngine } from '../engine';
import { json, route } from './respond';
import { tenantFromRequest } from '../tenants/tenants';

/** GET /api/v1/tenants/{tenant}/instances/{iid}/counts — served by the route file and by server/http/http-server.ts alike. */
export const getCounts = route<{ tenant: string; iid: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await getEngine().getCounts(tenant.id, params.iid));
});
