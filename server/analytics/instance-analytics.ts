// GET …/instances/{iid}/paths and …/funnel: the checks a route needs (the instance, its steps, the time window within
// the journal's retention), then the read (./paths.ts, ./funnel.ts). Runs on the request thread, reading the
// journal through the request thread's own connection: the engine thread goes on applying events meanwhile.
import { requireSteps } from '../engine/counts-history';
import { requireInstance } from '../engine/instances';
import type { Database } from '../storage/database';
import type { Tenant } from '../tenants/tenants';
import { funnelOf, type FunnelStep } from './funnel';
import { checkedWindow, iso } from './journal-window';
import { pathsOf, type PathEdge } from './paths';

type WindowQuery = { from?: string; to?: string };
type Answered = { instanceId: string; from: string; to: string; retainedFrom: string | null };

async function windowOf(database: Database, tenant: Tenant, instanceId: string, query: WindowQuery, now: number) {
  const instance = await requireInstance(database, tenant.id, instanceId);
  const window = await checkedWindow(database, tenant.id, query, (instance.startedAt ?? instance.createdAt).getTime(), now);
  const answered: Answered = {
    instanceId,
    from: iso(window.from),
    to: iso(window.to),
    retainedFrom: window.retainedFrom === null ? null : iso(window.retainedFrom),
  };
  return { instance, window, answered };
}

export async function instancePaths(
  database: Database,
  tenant: Tenant,
  instanceId: string,
  query: WindowQuery,
  now = Date.now(),
): Promise<Answered & { edges: PathEdge[] }> {
  const { window, answered } = await windowOf(database, tenant, instanceId, query, now);
  return { ...answered, edges: await pathsOf(database, { tenantId: tenant.id, instanceId, partitions: tenant.partitions, window }) };
}

export async function instanceFunnel(
  database: Database,
  tenant: Tenant,
  instanceId: string,
  query: WindowQuery & { steps: string[] },
  now = Date.now(),
): Promise<Answered & { steps: FunnelStep[] }> {
  const { instance, window, answered } = await windowOf(database, tenant, instanceId, query, now);
  await requireSteps(database, instance, query.steps);
  return { ...answered, steps: await funnelOf(database, { tenantId: tenant.id, instanceId, partitions: tenant.partitions, window }, query.steps) };
}
