// Journal retention by age and by size, per tenant (limits journalRetentionHours and journalMaxRows). Unlike the
// earlier rule, a consumer that does not read no longer keeps every entry forever: a cron moving 1M users every
// second added ~2 MB/s. What retention deletes is recorded per tenant as a watermark (JournalTrim.trimmedThrough), and
// a reader or consumer whose cursor is behind it is told (`lost`), never left to find moves silently missing.
// Entries a running instance still needs to recover (newer than its shard's checkpoint) stay, and so does the
// tenant's newest entry (server/storage/journal-trim.ts).
import type { Clock } from '../clock';
import { tenantLimits } from '../limits/limits';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';
import type { Database } from '../storage/database';
import { firstEntryTimeAfter, journalSpan, trimJournalChunk, trimmedThrough } from '../storage/journal-trim';

/** Deletes run in chunks of this many entries, so a large cleanup never holds the journal locked for long. */
const CLEANUP_CHUNK = 10_000;

/** Moves of a tenant deleted by retention before a reader at `after` read them: those with seq ≤ `through`. */
export type Lost = { through: number };

/**
 * Where the tenant's journal still holds every move: from the time of the first move after the retention watermark
 * (JournalTrim), or, when retention deleted every move it had, from the retention's age cutoff; null when retention
 * never deleted any (the whole history is there).
 */
export async function retainedFrom(database: Database, tenantId: string, now: number): Promise<number | null> {
  const through = await trimmedThrough(database, tenantId);
  if (through === 0) return null;
  const first = await firstEntryTimeAfter(database, tenantId, through);
  if (first !== undefined) return first;
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
  let deleted = 0;
  for (const { id: tenantId } of await database.db.tenant.findMany({ select: { id: true } })) {
    const span = await journalSpan(database, tenantId);
    if (!span) continue;
    const limits = await tenantLimits(database, tenantId);
    const olderThan = clock.now() - limits.journalRetentionHours * 3_600_000;
    // Seqs are unique across tenants, so the tenant holds at most lastSeq - firstSeq + 1 entries: only past that are
    // they counted (the count had been a scan of the whole journal every hour, 0.2-0.4 s of the engine thread at 1M).
    const mayExceed = span.lastSeq - span.firstSeq + 1 > limits.journalMaxRows;
    const throughSeq = mayExceed ? await newestSeqBeyond(database, tenantId, limits.journalMaxRows) : null;
    // Entries are numbered as they are written and stamped with the engine clock: when the first is younger than the
    // cutoff, nothing is old enough yet, and the tenant's entries are not read (the chunk's search read all of them to
    // find none: 0.3-0.6 s at 1M).
    if (throughSeq === null && span.firstTimeMs >= olderThan) continue;
    const trim = { tenantId, olderThan, throughSeq, runningStates: ACTIVE_INSTANCE_STATES, limit: CLEANUP_CHUNK };
    for (;;) {
      const count = await trimJournalChunk(database, trim);
      deleted += count;
      if (count < CLEANUP_CHUNK) break;
    }
  }
  return deleted;
}

/** The seq of the newest entry that is not among the tenant's `keep` newest. */
async function newestSeqBeyond(database: Database, tenantId: string, keep: number): Promise<number | null> {
  const [row] = await database.db.journal.findMany({ where: { tenantId }, orderBy: { seq: 'desc' }, skip: keep, take: 1, select: { seq: true } });
  return row ? Number(row.seq) : null;
}
