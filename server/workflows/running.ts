import { runtime } from '../runtime';
import { db } from '../storage/db';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';

// Which instance of a workflow is running, for the workflow views. The engine knows live user counts;
// it registers its lookup here so this module never imports the engine. Until it does, the Instance
// table answers (the user count recorded at start).

export type RunningInstance = { instanceId: string; userCount: number };
export type RunningLookup = (workflowIds: string[]) => Promise<Map<string, RunningInstance>>;

// Kept in the process runtime: Next.js bundles instrumentation (where the engine starts) and route handlers
// separately, so a plain module variable set by one would not be seen by the other.
export function setRunningLookup(lookup: RunningLookup): void {
  runtime().runningLookup = lookup;
}

export async function runningOf(workflowIds: string[]): Promise<Map<string, RunningInstance>> {
  if (workflowIds.length === 0) return new Map();
  return (runtime().runningLookup ?? fromInstanceTable)(workflowIds);
}

/** The Instance table's answer with the live user counts the engine knows (`liveTotal`; undefined: the recorded one). */
export function liveRunningLookup(liveTotal: (instanceId: string) => number | undefined): RunningLookup {
  return async (workflowIds) => {
    const found = await fromInstanceTable(workflowIds);
    for (const running of found.values()) running.userCount = liveTotal(running.instanceId) ?? running.userCount;
    return found;
  };
}

async function fromInstanceTable(workflowIds: string[]): Promise<Map<string, RunningInstance>> {
  const rows = await db().instance.findMany({
    where: { workflowId: { in: workflowIds }, state: { in: ACTIVE_INSTANCE_STATES } },
    select: { id: true, workflowId: true, userCount: true },
    orderBy: { createdAt: 'asc' },
  });
  return new Map(rows.map((row) => [row.workflowId, { instanceId: row.id, userCount: Number(row.userCount) }]));
}
