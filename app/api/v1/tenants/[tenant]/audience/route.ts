import { json, readJson } from '@/server/http/respond';
import { requireCondition } from '@/server/conditions/compile';
import { AudienceBody } from '@/server/profiles/audience';
import { tenantRoute } from '@/server/http/request-context';

/** How many users a condition matches now (bitmap plan, or per user on a bounded sample), with the first IDs. */
export const POST = tenantRoute<{ tenant: string }>(async ({ tenant, request, engine }) => {
  const body = await readJson(request, AudienceBody);
  // Refused here, on the request thread, a condition never waits behind the engine thread's work to be refused.
  requireCondition(body.condition);
  return json(await engine.profiles.estimateAudience(tenant.id, body));
});
