import { json, route } from '@/server/http/respond';
import { profileFields } from '@/server/profiles/audience';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

/** The indexed profile attributes: users, types and top values of each path (the rule builder's field chooser). */
export const GET = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await profileFields(database(), tenant.id));
});
