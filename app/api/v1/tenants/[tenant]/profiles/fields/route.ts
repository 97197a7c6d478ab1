import { json, route } from '@/server/http/respond';
import { getEngine } from '@/server/engine';
import { tenantFromRequest } from '@/server/tenants/tenants';

/** The indexed profile attributes: users, types and top values of each path (the rule builder's field chooser). */
export const GET = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await getEngine().profiles.profileFields(tenant.id));
});
