// Journal retention by age and by size, per tenant (limits journalRetentionHours and journalMaxRows). Unlike the
// earlier rule, a consumer that does not read no longer keeps every entry forever: a cron moving 1M users every
// second added ~2 MB/s. What retention deletes is recorded per tenant as a watermark (JournalTrim.trimmedThrough), and
// a reader or consumer whose cursor is behind it is told (`lost`), never left to find moves silently missing.
// Entries a running instance still needs to recover (newer than its shard's checkpoint) stay, and so does the
// journal's newest entry (seqs continue from the max).
import type { Clock } from '../clock';
import { tenantLimits } from '../limits/limits';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';
import type { Database } from '../storage/database';

/** Deletes run in chunks of this many entries, so a large cleanup never holds the journal locked for long. */
const CLEANUP_CHUNK = 10_000;

/** Moves of a tenant deleted by retention before a reader at `after` read them: those with seq ≤ `through`. */
export type Lost = { through: number };

export async function trimmedThrough(database: Database, tenantId: string): Promise<number> {
  const { params, bind } = database.dialect.parameters();
  const [row] = await database.db.$queryRawUnsafe<{ through: unknown }[]>(
    `SELECT "trimmedThrough" AS "through" FROM ${database.dialect.table('JournalTrim')} WHERE "tenantId" = ${bind(tenantId)}`,
    ...params,
  );
  return row ? Number(row.through) : 0;
}

/**
 * Where the tenant's journal still holds every move: from the time of the first move after the retention watermark
 * (JournalTrim), or, when retention deleted every move it had, from the retention's age cutoff; null when retention
 * never deleted any (the whole history is there).
 */
export async function retainedFrom(database: Database, tenantId: string, now: number): Promise<number | null> {
  const through = await trimmedThrough(database, tenantId);
  if (through === 0) return null;
  const { params, bind } = database.dialect.parameters();
  const journal = database.dialect.table('Journal');
  const [first] = await (await database.raw()).query<{ timeMs: unknown }>(
    `SELECT ${database.dialect.numberColumn('timeMs')} FROM ${journal} WHERE "tenantId" = ${bind(tenantId)} AND "seq" > ${bind(through)} ORDER BY ${journal}."seq" LIMIT 1`,
    params,
  );
  if (first) return Number(first.timeMs);
  return now - (await tenantLimits(database, tenantId)).journalRetentionHours * 3_600_000;
}

/** What a reader whose cursor is `after` lost to retention, or null. */
export async function lostAfter(database: Database, tenantId: string, after: number): Promise<Lost | null> {
  const through = await trimmedThrough(database, tenantId);
  return after < through ? { through } : null;
}

/**
 * Applies every tenant's retention (age and size) and returns how many entries were deleted. Called by the engine's
 * hourly housekeeping.
 */
export async function applyJournalRetention(database: Database, clock: Clock): Promise<number> {
  const tenants = await database.db.journal.groupBy({ by: ['tenantId'], _count: { _all: true } });
  let deleted = 0;
  for (const { tenantId, _count } of tenants) {
    const limits = await tenantLimits(database, tenantId);
    const cutoff = clock.now() - limits.journalRetentionHours * 3_600_000;
    const beyondSize = _count._all > limits.journalMaxRows ? await newestSeqBeyond(database, tenantId, limits.journalMaxRows) : null;
    deleted += await deleteEntries(database, tenantId, cutoff, beyondSize);
  }
  return deleted;
}

/** The seq of the newest entry that is not among the tenant's `keep` newest. */
async function newestSeqBeyond(database: Database, tenantId: string, keep: number): Promise<number | null> {
  const [row] = await database.db.journal.findMany({ where: { tenantId }, orderBy: { seq: 'desc' }, skip: keep, take: 1, select: { seq: true } });
  return row ? Number(row.seq) : null;
}

async function deleteEntries(database: Database, tenantId: string, cutoff: number, beyondSize: number | null): Promise<number> {
  const [journal, instance, checkpoint] = ['Journal', 'Instance', 'ShardCheckpoint'].map((name) => database.dialect.table(name));
  // Binding order is placeholder order (SQLite's `?`), so values are bound inline, left to right. Every table is
  // named with the tenant, so each statement stays within one tenant's rows (docs/SCALING.md).
  const chunk = (bind: (value: unknown) => string) => `SELECT j."seq" FROM ${journal} j WHERE j."tenantId" = ${bind(tenantId)}
      AND (j."timeMs" < ${bind(cutoff)}${beyondSize === null ? '' : ` OR j."seq" <= ${bind(beyondSize)}`})
      AND j."seq" < (SELECT MAX("seq") FROM ${journal})
      AND NOT EXISTS (
        SELECT 1 FROM ${instance} i WHERE i."tenantId" = j."tenantId" AND i."id" = j."instanceId"
          AND i."state" IN (${ACTIVE_INSTANCE_STATES.map(bind).join(', ')})
          AND NOT EXISTS (
            SELECT 1 FROM ${checkpoint} c WHERE c."instanceId" = j."instanceId" AND c."partition" = j."partition" AND c."journalSeq" >= j."seq"))
      ORDER BY j."seq" LIMIT ${CLEANUP_CHUNK}`;
  let deleted = 0;
  for (;;) {
    // The watermark is raised in the same transaction as the delete: a reader never finds entries gone unannounced.
    const count = await database.db.$transaction(async (tx) => {
      const read = database.dialect.parameters();
      const [{ through }] = await tx.$queryRawUnsafe<{ through: unknown }[]>(
        `SELECT MAX("seq") AS "through" FROM (${chunk(read.bind)}) AS doomed`,
        ...read.params,
      );
      if (through === null || through === undefined) return 0;
      const seq = Number(through);
      const doomed = database.dialect.parameters();
      const removed = await tx.$executeRawUnsafe(
        `DELETE FROM ${journal} WHERE "tenantId" = ${doomed.bind(tenantId)} AND "seq" IN (${chunk(doomed.bind)}) AND "seq" <= ${seq}`,
        ...doomed.params,
      );
      // A deleted tenant's last entries go without a watermark: nobody can read them, and it has no row to hold one.
      const trim = database.dialect.parameters();
      const trims = database.dialect.table('JournalTrim');
      await tx.$executeRawUnsafe(
        `INSERT INTO ${trims} ("tenantId", "trimmedThrough") SELECT ${trim.bind(tenantId)}, ${trim.bind(seq)}
         WHERE EXISTS (SELECT 1 FROM ${database.dialect.table('Tenant')} WHERE "id" = ${trim.bind(tenantId)})
         ON CONFLICT ("tenantId") DO UPDATE SET "trimmedThrough" =
           CASE WHEN excluded."trimmedThrough" > ${trims}."trimmedThrough" THEN excluded."trimmedThrough" ELSE ${trims}."trimmedThrough" END`,
        ...trim.params,
      );
      return removed;
    });
    deleted += count;
    if (count < CLEANUP_CHUNK) return deleted;
  }
}
