// Cluster membership in PostgreSQL (server/cluster/ decides when to join, beat, drain and leave): a member holds a
// session advisory lock of the schema's namespace on its ClusterSession and a ClusterMember row naming its lock key,
// whose heartbeat it writes. A member is live while its lock is held by some session of the database (PostgreSQL
// drops it the moment that session ends) and its heartbeat is fresh; rows whose lock is gone are of dead members.
import { DB_NOW_MS, type ClusterSession } from './cluster-session';

/** Takes the member lock `lockKey` for the session if no session holds it; whether it did. */
export async function tryMemberLock(session: ClusterSession, lockKey: number): Promise<boolean> {
  const { rows } = await session.run<{ locked: boolean }>('SELECT pg_try_advisory_lock($1::int4, $2::int4) AS "locked"', [session.lockNamespace, lockKey]);
  return rows[0].locked;
}

/** Writes the member's row (live, not draining, beating now), replacing any row of that name. */
export async function writeMemberRow(session: ClusterSession, name: string, lockKey: number): Promise<void> {
  await session.run(
    `INSERT INTO ${session.table('ClusterMember')} ("name", "lockKey", "draining", "heartbeatMs") VALUES ($1, $2, false, ${DB_NOW_MS})
       ON CONFLICT ("name") DO UPDATE SET "lockKey" = excluded."lockKey", "draining" = false, "heartbeatMs" = excluded."heartbeatMs"`,
    [name, lockKey],
  );
}

/** Writes the heartbeat of the member's row; false when the row is gone (deleted as dead) or has another lock key. */
export async function beatMemberRow(session: ClusterSession, name: string, lockKey: number): Promise<boolean> {
  const { rowCount } = await session.run(`UPDATE ${session.table('ClusterMember')} SET "heartbeatMs" = ${DB_NOW_MS} WHERE "name" = $1 AND "lockKey" = $2`, [
    name,
    lockKey,
  ]);
  return rowCount !== 0;
}

/** Leaving: the member's row goes and its lock is released (the session stays open). */
export async function removeMember(session: ClusterSession, name: string, lockKey: number): Promise<void> {
  await session.run(`DELETE FROM ${session.table('ClusterMember')} WHERE "name" = $1`, [name]);
  await session.run('SELECT pg_advisory_unlock($1::int4, $2::int4)', [session.lockNamespace, lockKey]);
}

/** Marks the member draining: it is left out of the live members while it hands its partitions back. */
export async function markMemberDraining(session: ClusterSession, name: string): Promise<void> {
  await session.run(`UPDATE ${session.table('ClusterMember')} SET "draining" = true WHERE "name" = $1`, [name]);
}

/**
 * The live members' names, sorted: lock held, heartbeat newer than `staleMs`, not draining. Rows of members whose
 * lock is gone are deleted first (they are dead: a member takes its lock before it writes its row).
 */
export async function liveMemberNames(session: ClusterSession, staleMs: number): Promise<string[]> {
  const members = session.table('ClusterMember');
  await session.run(`DELETE FROM ${members} m WHERE NOT ${lockHeld('m')}`, [session.lockNamespace]);
  const { rows } = await session.run<{ name: string }>(
    `SELECT m."name" FROM ${members} m WHERE NOT m."draining" AND m."heartbeatMs" > ${DB_NOW_MS} - ${Math.trunc(staleMs)} ORDER BY m."name"`,
  );
  return rows.map((r) => r.name);
}

/** Whether the member of that name holds its lock and has a heartbeat newer than `staleMs` (draining or not). */
export async function isMemberLive(session: ClusterSession, name: string, staleMs: number): Promise<boolean> {
  const { rows } = await session.run<{ live: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${session.table('ClusterMember')} m WHERE m."name" = $2 AND ${lockHeld('m')} AND m."heartbeatMs" > ${DB_NOW_MS} - ${Math.trunc(staleMs)}) AS "live"`,
    [session.lockNamespace, name],
  );
  return rows[0].live;
}

/** SQL: the advisory lock of member row `alias` is held by some session of this database ($1 = the namespace). */
function lockHeld(alias: string): string {
  return `EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = $1::int4::oid AND l.objid = ${alias}."lockKey"::oid)`;
}
