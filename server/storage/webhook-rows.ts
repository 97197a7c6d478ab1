// Webhook rows written as whole operations, each one transaction: a cut round (its deliveries, the destination's new
// cursor and what its frequency caps counted and skipped and quiet hours held), a part of a held quiet-hours row
// released as deliveries, the compaction of finished decision rows, and a cap's change. The domain
// (server/webhooks/) decides what the rows hold; these say when they may be written.
import { isUniqueViolation } from '../errors';
import type { Database } from './database';
import { outcomeOf, RolledBack } from './rollback';
import type { FrequencyCap, Prisma } from './generated/sqlite/client';

export type DestinationCursor = { cursor: bigint; cursorUsers: number; lostThrough: bigint };
/** A cap window's counters as a round leaves them; `version` null: the round created the window. */
export type CapWindowWrite = { capId: string; bucket: bigint; levels: Uint8Array<ArrayBuffer>; version: number | null };

export type CutRoundRows = {
  deliveries: Prisma.WebhookDeliveryCreateManyInput[];
  capWindows: CapWindowWrite[];
  capped: Prisma.CappedDeliveryCreateManyInput[];
  quiet: Prisma.QuietDeliveryCreateManyInput[];
};

/**
 * The destinations whose cursor is behind their tenant's newest journal seq, each with that seq: a tenant's seqs
 * follow its commits, while another tenant's may commit out of their order (PostgreSQL takes them from one sequence),
 * so a cursor is compared with its own tenant's. One statement over every destination, as the pump's sweeps are.
 */
export async function destinationsBehind(database: Database): Promise<{ id: string; tenantId: string; newest: bigint }[]> {
  const { table } = database.dialect;
  const rows = await database.db.$queryRawUnsafe<{ id: string; tenantId: string; cursor: unknown; newest: unknown }[]>(
    `SELECT d."id", d."tenantId", d."cursor", (SELECT MAX(j."seq") FROM ${table('Journal')} j WHERE j."tenantId" = d."tenantId") AS "newest"
     FROM ${table('WebhookDestination')} d`,
  );
  return rows.flatMap(({ id, tenantId, cursor, newest }) =>
    newest !== null && BigInt(String(cursor)) < BigInt(String(newest)) ? [{ id, tenantId, newest: BigInt(String(newest)) }] : [],
  );
}

/**
 * Commits a round only if the destination's cursor is still `read` and no window it counted into changed meanwhile
 * (compare-and-set on the window's version; a window two rounds create clashes on its key). False, with nothing
 * written, when either raced: the round is cut again from what committed.
 */
export async function commitCutRound(
  database: Database,
  destination: { id: string; tenantId: string },
  read: DestinationCursor,
  next: DestinationCursor,
  rows: CutRoundRows,
): Promise<boolean> {
  try {
    return await outcomeOf(
      database.db.$transaction(async (tx) => {
        const moved = await tx.webhookDestination.updateMany({ where: { id: destination.id, tenantId: destination.tenantId, ...read }, data: next });
        if (moved.count !== 1) return false;
        for (const window of rows.capWindows) {
          const { capId, bucket, levels, version } = window;
          const tenantId = destination.tenantId;
          if (version === null) await tx.frequencyCapWindow.create({ data: { tenantId, capId, bucket, levels, version: 1 } });
          else {
            const updated = await tx.frequencyCapWindow.updateMany({ where: { tenantId, capId, bucket, version }, data: { levels, version: version + 1 } });
            if (updated.count !== 1) throw new RolledBack(false);
          }
        }
        if (rows.capped.length) await tx.cappedDelivery.createMany({ data: rows.capped });
        if (rows.quiet.length) await tx.quietDelivery.createMany({ data: rows.quiet });
        if (rows.deliveries.length) await tx.webhookDelivery.createMany({ data: rows.deliveries });
        return true;
      }),
    );
  } catch (error) {
    // A window two rounds create at once clashes on its key: the same race.
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

/**
 * Marks `releasedUsers` of the held row sent (the whole row: status sent) with the part's deliveries, only if no
 * other process released from it since it was read. False when one did (its deliveries exist under the same ids).
 */
export async function releaseQuietPart(
  database: Database,
  row: { id: string; tenantId: string; releasedUsers: number },
  releasedUsers: number,
  allSent: boolean,
  deliveries: Prisma.WebhookDeliveryCreateManyInput[],
): Promise<boolean> {
  try {
    return await database.db.$transaction(async (tx) => {
      const moved = await tx.quietDelivery.updateMany({
        where: { id: row.id, tenantId: row.tenantId, status: 'held', releasedUsers: row.releasedUsers },
        data: { releasedUsers, ...(allSent ? { status: 'sent' } : {}) },
      });
      if (moved.count !== 1) return false;
      if (deliveries.length) await tx.webhookDelivery.createMany({ data: deliveries });
      return true;
    });
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

/** Replaces the CappedDelivery rows `ids` with `merged` (the compaction of finished decisions). */
export async function replaceCappedRows(database: Database, ids: string[], merged: Prisma.CappedDeliveryCreateManyInput): Promise<void> {
  const { db } = database;
  const where = { id: { in: ids }, tenantId: merged.tenantId };
  await db.$transaction([db.cappedDelivery.deleteMany({ where }), db.cappedDelivery.create({ data: merged })]);
}

/** Replaces the QuietDelivery rows `ids` with `merged` (the compaction of dropped decisions). */
export async function replaceQuietRows(database: Database, ids: string[], merged: Prisma.QuietDeliveryCreateManyInput): Promise<void> {
  const { db } = database;
  const where = { id: { in: ids }, tenantId: merged.tenantId };
  await db.$transaction([db.quietDelivery.deleteMany({ where }), db.quietDelivery.create({ data: merged })]);
}

/** Changes a cap; `restartCounting` also deletes its windows (a new window length no longer lines up with them). */
export async function updateCapRow(
  database: Database,
  cap: { id: string; tenantId: string },
  change: Prisma.FrequencyCapUpdateInput,
  restartCounting: boolean,
): Promise<FrequencyCap> {
  return database.db.$transaction(async (tx) => {
    if (restartCounting) await tx.frequencyCapWindow.deleteMany({ where: { tenantId: cap.tenantId, capId: cap.id } });
    return tx.frequencyCap.update({ where: { id: cap.id, tenantId: cap.tenantId }, data: change });
  });
}
