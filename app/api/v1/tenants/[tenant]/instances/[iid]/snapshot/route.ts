import { getEngine } from '@/server/engine';
import { json, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string; iid: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const snapshot = await getEngine().getSnapshot(tenant.id, params.iid);
  const base = `/api/v1/tenants/${encodeURIComponent(params.tenant)}/instances/${encodeURIComponent(params.iid)}/steps`;
  const exports = Object.fromEntries(Object.keys(snapshot.counts.steps).map((step) => [step, `${base}/${encodeURIComponent(step)}/export?format=csv`]));
  return json({ ...snapshot, exports });
});
