import { json, readJson, route } from '@/server/http/respond';
import { getEngine } from '@/server/engine';
import { AudienceBody } from '@/server/profiles/audience';
import { tenantFromRequest } from '@/server/tenants/tenants';

/** How many users a condition matches now (bitmap plan, or per user on a bounded sample), with the first IDs. */
export const POST = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await getEngine().profiles.estimateAudience(tenant.id, await readJson(request, AudienceBody)));
});
