import { discardDeadLetter, getDeadLetter } from '@/server/engine';
import { json, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string; id: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await getDeadLetter(tenant.id, params.id));
});

export const DELETE = route<{ tenant: string; id: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  await discardDeadLetter(tenant.id, params.id);
  return new Response(null, { status: 204 });
});
