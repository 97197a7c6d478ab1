import { combineCrowds, CombineCrowdsBody, crowdView } from '@/server/crowd';
import { json, readJson } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

/** A new crowd from existing ones: union, intersection or difference (the first minus the others). */
export const POST = tenantRoute<{ tenant: string }>(async ({ tenant, request, database }) => {
  const body = await readJson(request, CombineCrowdsBody);
  const { crowd, created } = await combineCrowds(database, tenant.id, body);
  return json(crowdView(crowd), created ? 201 : 200);
});
