// Whether this process runs as a member of a cluster: on PostgreSQL, with the engine on its own thread (the default),
// unless CROWDFLOW_CLUSTER=off. SQLite is one process, exactly as before (its file lock is the only coordination it
// has); so is an engine on the request thread (CROWDFLOW_ENGINE_THREAD=off: the first process takes every partition).
import { env } from '../env';
import { processOwner } from '../process-owner';
import { sharedDatabaseTarget } from '../storage/db';
import { ClusterMember } from './member';
import type { Database } from '../storage/database';
import type { DatabaseTarget } from '../storage/database-url';

/** Whether the app whose storage is `target` (the registered app's by default) is a cluster member. */
export function clusterEnabled(target?: DatabaseTarget): boolean {
  return env().CROWDFLOW_CLUSTER !== 'off' && env().CROWDFLOW_ENGINE_THREAD === 'on' && sharedDatabaseTarget(target) !== undefined;
}

/** This process's membership for its engine (its name is the engine's lease owner name), or none. */
export function clusterMember(database: Database, storageTarget?: DatabaseTarget, owner = processOwner()): ClusterMember | undefined {
  const target = sharedDatabaseTarget(storageTarget);
  if (!clusterEnabled(storageTarget) || !target) return undefined;
  return new ClusterMember(database, target, owner);
}
