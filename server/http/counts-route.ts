import { getEngine } from '../engine';
import { database } from '../storage/database';
import { json, route } from './respond';
import { tenantFromRequest } from '../tenants/tenants';
import { cappedCounts } from '../webhooks/capping';

/** GET /api/v1/tenants/{tenant}/instances/{iid}/counts — served by the route file and by server/http/http-server.ts alike. */
export const getCounts = route<{ tenant: string; iid: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const counts = await getEngine().getCounts(tenant.id, params.iid);
  // Deliveries frequency caps skipped, per step (server/webhooks/capping.ts); absent when none was.
  const capped = await cappedCounts(database(), tenant.id, params.iid);
  return json(Object.keys(capped).length ? { ...counts, capped } : counts);
});
