import { json } from '@/server/http/respond';
import { getProfile, parseUserParam } from '@/server/profiles/profiles';
import { tenantRoute } from '@/server/http/request-context';

type Params = { tenant: string; user: string };

export const GET = tenantRoute<Params>(async ({ tenant, database }, params) => {
  return json(await getProfile(database, tenant.id, parseUserParam(params.user)));
});

export const DELETE = tenantRoute<Params>(async ({ tenant, engine }, params) => {
  await engine.profiles.deleteProfile(tenant.id, parseUserParam(params.user));
  return new Response(null, { status: 204 });
});
