import { discardDeadLetter, getDeadLetter } from '@/server/engine';
import { json, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string; id: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await getDeadLetter(database(), tenant.id, params.id));
});

export const DELETE = route<{ tenant: string; id: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  await discardDeadLetter(database(), tenant.id, params.id);
  return new Response(null, { status: 204 });
});
