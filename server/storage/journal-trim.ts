// Journal retention's statements (server/engine/journal-retention.ts decides what each tenant keeps): the
// tenant's entries are deleted a chunk at a time, and its watermark (JournalTrim.trimmedThrough) is raised in the same
// transaction, so a reader never finds entries gone unannounced. Entries a running instance still needs to recover
// (newer than its shard's checkpoint) stay, and so does the tenant's newest entry (on SQLite seqs continue from the
// journal's max, which is some tenant's newest; the newest of each is also where a consumer starting at the tail starts).
import type { Database } from './database';

/** The seq through which retention deleted the tenant's entries; 0 when it never deleted any. */
export async function trimmedThrough(database: Database, tenantId: string): Promise<number> {
  const { params, bind } = database.dialect.parameters();
  const [row] = await database.db.$queryRawUnsafe<{ through: unknown }[]>(
    `SELECT "trimmedThrough" AS "through" FROM ${database.dialect.table('JournalTrim')} WHERE "tenantId" = ${bind(tenantId)}`,
    ...params,
  );
  return row ? Number(row.through) : 0;
}

/** The time (epoch ms) of the tenant's first entry after `seq`; undefined when there is none. */
export async function firstEntryTimeAfter(database: Database, tenantId: string, seq: number): Promise<number | undefined> {
  const { params, bind } = database.dialect.parameters();
  const journal = database.dialect.table('Journal');
  const [first] = await (await database.raw()).query<{ timeMs: unknown }>(
    `SELECT ${database.dialect.numberColumn('timeMs')} FROM ${journal} WHERE "tenantId" = ${bind(tenantId)} AND "seq" > ${bind(seq)} ORDER BY ${journal}."seq" LIMIT 1`,
    params,
  );
  return first ? Number(first.timeMs) : undefined;
}

/** Which of a tenant's entries retention deletes. */
export interface JournalTrim {
  tenantId: string;
  /** Entries older than this (epoch ms) go… */
  olderThan: number;
  /** …and so do those with a seq at or below this one (the size bound), when set. */
  throughSeq: number | null;
  /** Instances in these states are running: their entries newer than their shard's checkpoint stay. */
  runningStates: readonly string[];
  /** Entries deleted at most, in seq order. */
  limit: number;
}

/** Deletes the first `limit` of the tenant's entries that retention deletes and raises its watermark over them; how many it deleted. */
export async function trimJournalChunk(database: Database, { tenantId, olderThan, throughSeq, runningStates, limit }: JournalTrim): Promise<number> {
  const { dialect } = database;
  const [journal, instance, checkpoint] = ['Journal', 'Instance', 'ShardCheckpoint'].map((name) => dialect.table(name));
  // Binding order is placeholder order (SQLite's `?`), so values are bound inline, left to right. Every table is
  // named with the tenant, so each statement stays within one tenant's rows (docs/SCALING.md).
  const chunk = (bind: (value: unknown) => string) => `SELECT j."seq" FROM ${journal} j WHERE j."tenantId" = ${bind(tenantId)}
      AND (j."timeMs" < ${bind(olderThan)}${throughSeq === null ? '' : ` OR j."seq" <= ${bind(throughSeq)}`})
      AND j."seq" < (SELECT MAX(n."seq") FROM ${journal} n WHERE n."tenantId" = j."tenantId")
      AND NOT EXISTS (
        SELECT 1 FROM ${instance} i WHERE i."tenantId" = j."tenantId" AND i."id" = j."instanceId"
          AND i."state" IN (${runningStates.map(bind).join(', ')})
          AND NOT EXISTS (
            SELECT 1 FROM ${checkpoint} c WHERE c."tenantId" = j."tenantId" AND c."instanceId" = j."instanceId" AND c."partition" = j."partition" AND c."journalSeq" >= j."seq"))
      ORDER BY j."seq" LIMIT ${limit}`;
  return database.db.$transaction(async (tx) => {
    const read = dialect.parameters();
    const [{ through }] = await tx.$queryRawUnsafe<{ through: unknown }[]>(
      `SELECT MAX("seq") AS "through" FROM (${chunk(read.bind)}) AS doomed`,
      ...read.params,
    );
    if (through === null || through === undefined) return 0;
    const seq = Number(through);
    const doomed = dialect.parameters();
    const removed = await tx.$executeRawUnsafe(
      `DELETE FROM ${journal} WHERE "tenantId" = ${doomed.bind(tenantId)} AND "seq" IN (${chunk(doomed.bind)}) AND "seq" <= ${seq}`,
      ...doomed.params,
    );
    // A deleted tenant's last entries go without a watermark: nobody can read them, and it has no row to hold one.
    const trim = dialect.parameters();
    const trims = dialect.table('JournalTrim');
    await tx.$executeRawUnsafe(
      `INSERT INTO ${trims} ("tenantId", "trimmedThrough") SELECT ${trim.bind(tenantId)}, ${trim.bind(seq)}
       WHERE EXISTS (SELECT 1 FROM ${dialect.table('Tenant')} WHERE "id" = ${trim.bind(tenantId)})
       ON CONFLICT ("tenantId") DO UPDATE SET "trimmedThrough" =
         CASE WHEN excluded."trimmedThrough" > ${trims}."trimmedThrough" THEN excluded."trimmedThrough" ELSE ${trims}."trimmedThrough" END`,
      ...trim.params,
    );
    return removed;
  });
}

/** The tenant's first and last entry by seq, and the first one's time (epoch ms); null when it has none. Two probes
 * of the (tenantId, seq) index: no entry of the tenant is read beyond them. */
export async function journalSpan(database: Database, tenantId: string): Promise<{ firstSeq: number; lastSeq: number; firstTimeMs: number } | null> {
  const { dialect } = database;
  const journal = dialect.table('Journal');
  const { params, bind } = dialect.parameters();
  const [row] = await (await database.raw()).query<{ firstSeq: unknown; lastSeq: unknown; firstTimeMs: unknown }>(
    `SELECT oldest."seq" AS "firstSeq", oldest."timeMs" AS "firstTimeMs",
       (SELECT newest."seq" FROM ${journal} newest WHERE newest."tenantId" = ${bind(tenantId)} ORDER BY newest."seq" DESC LIMIT 1) AS "lastSeq"
     FROM (SELECT "seq", "timeMs" FROM ${journal} WHERE "tenantId" = ${bind(tenantId)} ORDER BY "seq" ASC LIMIT 1) oldest`,
    params,
  );
  if (!row) return null;
  return { firstSeq: Number(row.firstSeq), lastSeq: Number(row.lastSeq), firstTimeMs: Number(row.firstTimeMs) };
}
