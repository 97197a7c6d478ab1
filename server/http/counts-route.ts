import { countsAsOf, type Counts } from '../engine';
import { experimentResult } from '../../core/model/experiment';
import { liftOf } from '../../core/model/lift';
import { CountsQuery } from './engine-api';
import { json, queryParams } from './respond';
import { cappedCounts } from '../webhooks/capping';
import { tenantRoute } from './request-context';
import { quietCounts } from '../webhooks/quiet-holding';
import type { Database } from '../storage/database';

/** GET /api/v1/tenants/{tenant}/instances/{iid}/counts — served by the route file and by server/http/http-server.ts alike. */
export const getCounts = tenantRoute<{ tenant: string; iid: string }>(async ({ tenant, request, database, engine, clock }, params) => {
  const { asOf } = queryParams(request, CountsQuery);
  // `now` on the clock the engine stamps moves with: a moment after it has no moves yet.
  if (asOf !== undefined) return json(await countsAsOf(database, tenant, params.iid, asOf, clock.now()));
  // At once, not one after the other: the engine thread answers while the database reads what the webhook cut recorded.
  const [counts, delivery] = await Promise.all([engine.getCounts(tenant.id, params.iid), deliveryCounts(database, tenant.id, params.iid)]);
  return json(countsBody(counts, delivery));
});

/** What the webhook cut recorded per step: deliveries frequency caps skipped, and quiet hours held or dropped. */
export type DeliveryCounts = Pick<Counts, 'capped' | 'quiet'>;

export async function deliveryCounts(database: Database, tenantId: string, instanceId: string): Promise<DeliveryCounts> {
  const [capped, quiet] = await Promise.all([cappedCounts(database, tenantId, instanceId), quietCounts(database, tenantId, instanceId)]);
  return { capped, quiet };
}

/**
 * The counts as the API answers them: with what frequency caps skipped and quiet hours held or dropped (each when
 * any), the holdout's lift (when measured) and each experiment's rates, intervals and probabilities of being best.
 */
export function countsBody(counts: Counts, { capped, quiet }: DeliveryCounts): Counts {
  const lift = liftOf(counts);
  const experiments = counts.experiments && Object.fromEntries(Object.entries(counts.experiments).map(([step, figures]) => [step, experimentResult(figures)]));
  return {
    ...counts,
    ...(Object.keys(capped ?? {}).length ? { capped } : {}),
    ...(Object.keys(quiet ?? {}).length ? { quiet } : {}),
    ...(lift ? { lift } : {}),
    ...(experiments ? { experiments } : {}),
  };
}
