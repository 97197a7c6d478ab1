import type { Database } from '../database';

/** The journal's max seq, in SQL: what a checkpoint or a crowd change written in the same transaction follows. */
export const journalMaxSeqSql = (database: Database) => `(SELECT COALESCE(MAX("seq"), 0) FROM ${database.dialect.table('Journal')})`;
