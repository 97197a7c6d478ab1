import { json, readJson, route } from '@/server/http/respond';
import { requireCondition } from '@/server/conditions/compile';
import { getEngine } from '@/server/engine';
import { AudienceBody } from '@/server/profiles/audience';
import { tenantFromRequest } from '@/server/tenants/tenants';

/** How many users a condition matches now (bitmap plan, or per user on a bounded sample), with the first IDs. */
export const POST = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const body = await readJson(request, AudienceBody);
  // Refused here, on the request thread, a condition never waits behind the engine thread's work to be refused.
  requireCondition(body.condition);
  return json(await getEngine().profiles.estimateAudience(tenant.id, body));
});
