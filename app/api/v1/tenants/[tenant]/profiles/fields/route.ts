import { json } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

/** The indexed profile attributes: users, types and top values of each path (the rule builder's field chooser). */
export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, engine }) => {
  return json(await engine.profiles.profileFields(tenant.id));
});
