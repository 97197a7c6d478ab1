import { json, readJson, route } from '@/server/http/respond';
import { AudienceBody, estimateAudience } from '@/server/profiles/audience';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

/** How many users a condition matches now (bitmap plan, or per user on a bounded sample), with the first IDs. */
export const POST = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await estimateAudience(database(), tenant.id, await readJson(request, AudienceBody)));
});
