import { combineCrowds, CombineCrowdsBody, crowdView } from '@/server/crowd';
import { json, readJson, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

/** A new crowd from existing ones: union, intersection or difference (the first minus the others). */
export const POST = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const body = await readJson(request, CombineCrowdsBody);
  const { crowd, created } = await combineCrowds(database(), tenant.id, body);
  return json(crowdView(crowd), created ? 201 : 200);
});
