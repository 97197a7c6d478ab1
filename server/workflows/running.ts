import type { Database } from '../storage/database';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';

// Which instance of a workflow is running, for the workflow views. The engine knows live user counts: the
// composition root (server/create-app.ts) keeps its lookup in the app's local state (useLiveRunningLookup). Without
// one, the Instance table answers (the user count recorded at start).

export type RunningInstance = { instanceId: string; userCount: number };
/** Reads through the Database it is handed: the engine registers the lookup, the workflow views hand it theirs. */
export type RunningLookup = (database: Database, workflowIds: string[]) => Promise<Map<string, RunningInstance>>;

export async function runningOf(database: Database, workflowIds: string[]): Promise<Map<string, RunningInstance>> {
  if (workflowIds.length === 0) return new Map();
  return (runningLookupOf(database).lookup ?? fromInstanceTable)(database, workflowIds);
}

const runningLookupOf = (database: Database) => database.local.held<{ lookup?: RunningLookup }>('running-lookup', () => ({}));

/** The app of `database` answers with the engine's live counts from now on. */
export function setRunningLookup(database: Database, lookup: RunningLookup): void {
  runningLookupOf(database).lookup = lookup;
}

/** The lookup the app of `database` uses, undefined: the Instance table's. */
export function runningLookupIn(database: Database): RunningLookup | undefined {
  return runningLookupOf(database).lookup;
}

/** The Instance table's answer with the live user counts the engine knows (`liveTotal`; undefined: the recorded one). */
export function liveRunningLookup(liveTotal: (instanceId: string) => number | undefined): RunningLookup {
  return async (database, workflowIds) => {
    const found = await fromInstanceTable(database, workflowIds);
    for (const running of found.values()) running.userCount = liveTotal(running.instanceId) ?? running.userCount;
    return found;
  };
}

async function fromInstanceTable({ db }: Database, workflowIds: string[]): Promise<Map<string, RunningInstance>> {
  const rows = await db.instance.findMany({
    where: { workflowId: { in: workflowIds }, state: { in: ACTIVE_INSTANCE_STATES } },
    select: { id: true, workflowId: true, userCount: true },
    orderBy: { createdAt: 'asc' },
  });
  return new Map(rows.map((row) => [row.workflowId, { instanceId: row.id, userCount: Number(row.userCount) }]));
}
