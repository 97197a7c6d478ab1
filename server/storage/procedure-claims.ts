// A claim of queued procedures for one runner (server/procedures/store.ts decides which to take): in one transaction,
// claimers across processes take turns, the queue is read, and the chosen procedures that no other transaction holds
// are taken over from their previous owners and read back in full.
import type { Database } from './database';
import type { Tx } from './db';
import type { Dialect } from './dialect';
import type { Procedure } from './generated/sqlite/client';

const QUEUE_COLUMNS = {
  id: true,
  type: true,
  tenantId: true,
  parentId: true,
  lockKeys: true,
  owner: true,
  nextRunMs: true,
  createdAt: true,
  updatedAt: true,
} as const;

/** An unfinished procedure as the queue needs it: no state, data or output. */
export type QueuedProcedure = Pick<Procedure, keyof typeof QUEUE_COLUMNS>;

export interface ProcedureClaim {
  /** The procedures taken, in the order chosen. */
  claimed: Procedure[];
  /** The taken procedures that have child procedures. */
  withChildren: Set<string>;
}

/**
 * Takes for `owner` the procedures that `choose` picks from the unfinished ones (in queue order, which it decides),
 * leaving out those another transaction holds (a commit of their previous owner) or whose owner changed since the read.
 */
export async function claimProcedures(
  { db, dialect }: Database,
  owner: string,
  now: number,
  choose: (unfinished: QueuedProcedure[]) => QueuedProcedure[],
): Promise<ProcedureClaim> {
  return db.$transaction(async (tx) => {
    // Serializes claimers across processes for the rest of the transaction.
    await dialect.lockUntilCommit(tx, 'crowdflow.procedures');
    const claimedIds = await take(tx, dialect, await lockChosen(tx, dialect, choose(await readQueue(tx, dialect))), owner, now);
    const claimed = claimedIds.length ? await tx.procedure.findMany({ where: { id: { in: claimedIds } } }) : [];
    claimed.sort((a, b) => claimedIds.indexOf(a.id) - claimedIds.indexOf(b.id));
    const parents = claimedIds.length
      ? await tx.procedure.findMany({ where: { parentId: { in: claimedIds } }, select: { parentId: true }, distinct: ['parentId'] })
      : [];
    return { claimed, withChildren: new Set(parents.map((row) => row.parentId!)) };
  });
}

/** The unfinished procedures, queue columns only: one raw statement (the ORM's row mapping cost more than the read). */
async function readQueue(tx: Tx, sql: Dialect): Promise<QueuedProcedure[]> {
  const columns = Object.keys(QUEUE_COLUMNS)
    .map((column) => `"${column}"`)
    .join(', ');
  const rows = await tx.$queryRawUnsafe<QueuedProcedure[]>(`SELECT ${columns} FROM ${sql.table('Procedure')} WHERE "state" NOT IN ('done', 'failed')`);
  for (const row of rows) {
    // Raw rows may carry dates as text and counters as bigint, depending on the driver.
    row.createdAt = new Date(row.createdAt);
    row.updatedAt = new Date(row.updatedAt);
  }
  return rows;
}

/**
 * The chosen rows that no other transaction holds (a commit of their previous owner, a retry) now locked for this
 * claim, on databases with row locks; all of them where the claim lock already excludes every other writer. Only the
 * rows about to be taken are locked: locking every queued row made each claim wait for, and hold up, every commit.
 */
async function lockChosen(tx: Tx, sql: Dialect, chosen: QueuedProcedure[]): Promise<QueuedProcedure[]> {
  if (chosen.length === 0) return chosen;
  const { params, bind } = sql.parameters();
  const unlocked = sql.skippingLockedRows(`SELECT "id" FROM ${sql.table('Procedure')} WHERE "id" IN (${chosen.map((row) => bind(row.id)).join(', ')})`);
  if (unlocked === null) return chosen;
  const free = new Set((await tx.$queryRawUnsafe<{ id: string }[]>(unlocked, ...params)).map((row) => row.id));
  return chosen.filter((row) => free.has(row.id));
}

/** Takes the chosen procedures for this owner, one statement per previous owner; returns the ids taken, in order. */
async function take(tx: Tx, sql: Dialect, rows: QueuedProcedure[], owner: string, now: number): Promise<string[]> {
  const byOwner = new Map<string | null, string[]>();
  for (const row of rows) byOwner.set(row.owner, [...(byOwner.get(row.owner) ?? []), row.id]);
  const taken = new Set<string>();
  for (const [previous, ids] of byOwner) {
    const { params, bind } = sql.parameters();
    const set = `"owner" = ${bind(owner)}, "updatedAt" = ${bind(new Date(now))}`;
    const match = `"id" IN (${ids.map(bind).join(', ')}) AND ${previous === null ? '"owner" IS NULL' : `"owner" = ${bind(previous)}`}`;
    const updated = await tx.$queryRawUnsafe<{ id: string }[]>(`UPDATE ${sql.table('Procedure')} SET ${set} WHERE ${match} RETURNING "id"`, ...params);
    for (const { id } of updated) taken.add(id);
  }
  return rows.filter((row) => taken.has(row.id)).map((row) => row.id);
}
