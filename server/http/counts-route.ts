import { app } from '../app';
import { countsAsOf, getEngine, type Counts } from '../engine';
import { liftOf } from '../model/lift';
import { database } from '../storage/database';
import { CountsQuery } from './engine-api';
import { json, queryParams, route } from './respond';
import { tenantFromRequest } from '../tenants/tenants';
import { cappedCounts } from '../webhooks/capping';

/** GET /api/v1/tenants/{tenant}/instances/{iid}/counts — served by the route file and by server/http/http-server.ts alike. */
export const getCounts = route<{ tenant: string; iid: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { asOf } = queryParams(request, CountsQuery);
  // `now` on the clock the engine stamps moves with: a moment after it has no moves yet.
  if (asOf !== undefined) return json(await countsAsOf(database(), tenant, params.iid, asOf, app().clock.now()));
  const counts = await getEngine().getCounts(tenant.id, params.iid);
  // Deliveries frequency caps skipped, per step (server/webhooks/capping.ts); absent when none was.
  const capped = await cappedCounts(database(), tenant.id, params.iid);
  return json(countsBody(counts, capped));
});

/** The counts as the API answers them: with what frequency caps skipped (when any did) and the holdout's lift (when measured). */
export function countsBody(counts: Counts, capped: Counts['capped']): Counts {
  const lift = liftOf(counts);
  return { ...counts, ...(Object.keys(capped ?? {}).length ? { capped } : {}), ...(lift ? { lift } : {}) };
}
