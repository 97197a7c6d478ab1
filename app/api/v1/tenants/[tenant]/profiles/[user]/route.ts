import { json, route } from '@/server/http/respond';
import { getEngine } from '@/server/engine';
import { getProfile, parseUserParam } from '@/server/profiles/profiles';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

type Params = { tenant: string; user: string };

export const GET = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await getProfile(database(), tenant.id, parseUserParam(params.user)));
});

export const DELETE = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  await getEngine().profiles.deleteProfile(tenant.id, parseUserParam(params.user));
  return new Response(null, { status: 204 });
});
