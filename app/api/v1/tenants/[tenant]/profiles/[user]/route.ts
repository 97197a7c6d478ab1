import { json, route } from '@/server/http/respond';
import { deleteProfile, getProfile, parseUserParam } from '@/server/profiles/profiles';
import { tenantFromRequest } from '@/server/tenants/tenants';

type Params = { tenant: string; user: string };

export const GET = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await getProfile(tenant.id, parseUserParam(params.user)));
});

export const DELETE = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  await deleteProfile(tenant.id, parseUserParam(params.user));
  return new Response(null, { status: 204 });
});
