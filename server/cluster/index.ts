// Whether this process runs as a member of a cluster: on PostgreSQL, with the engine on its own thread (the default),
// unless CROWDFLOW_CLUSTER=off. SQLite is one process, exactly as before (its file lock is the only coordination it
// has); so is an engine on the request thread (CROWDFLOW_ENGINE_THREAD=off: the first process takes every partition).
import type { Env } from '../env';
import { processOwner } from '../process-owner';
import { sharedDatabaseTarget } from '../storage/db';
import { ClusterMember } from './member';
import type { Database } from '../storage/database';
import type { DatabaseTarget, PostgresTarget } from '../storage/database-url';

/** The database the cluster of an app with `env` over `storageTarget` meets on, or undefined when it is no member. */
export function clusterTarget(env: Env, storageTarget: DatabaseTarget): PostgresTarget | undefined {
  if (env.CROWDFLOW_CLUSTER === 'off' || env.CROWDFLOW_ENGINE_THREAD !== 'on') return undefined;
  return sharedDatabaseTarget(storageTarget, env.CROWDFLOW_DIRECT_DATABASE_URL);
}

/** This process's membership for its engine (its name is the engine's lease owner name), or none outside a cluster. */
export function clusterMember(database: Database, target: PostgresTarget | undefined, owner = processOwner()): ClusterMember | undefined {
  return target ? new ClusterMember(database, target, owner) : undefined;
}
