import { json } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; iid: string }>(async ({ tenant, engine }, params) => {
  const snapshot = await engine.getSnapshot(tenant.id, params.iid);
  const base = `/api/v1/tenants/${encodeURIComponent(params.tenant)}/instances/${encodeURIComponent(params.iid)}/steps`;
  const exports = Object.fromEntries(Object.keys(snapshot.counts.steps).map((step) => [step, `${base}/${encodeURIComponent(step)}/export?format=csv`]));
  return json({ ...snapshot, exports });
});
