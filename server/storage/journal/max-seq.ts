// Journal seqs. A seq orders one tenant's moves: every reader of seqs (recovery after a checkpoint, notification and
// webhook cursors, retention) compares them only with rows of the same tenant, so only one tenant's writers need to
// wait for each other (commit.ts takes a lock per tenant). On PostgreSQL seqs come from a sequence, unique over every
// tenant, so writers of different tenants commit side by side; SQLite's one writer continues from the table's max.
import type { Database } from '../database';

/** The PostgreSQL sequence journal seqs come from (migration `journal_seq_sequence`). */
export const JOURNAL_SEQUENCE = 'Journal_seq_seq';

/**
 * The seq of the `ordinal`-th row (1-based, SQL) a statement inserts: the sequence's next value (PostgreSQL; taken in
 * the statement's row order) or the journal's max plus its position (SQLite).
 */
export function nextJournalSeqSql(database: Database, ordinal: string): string {
  return database.dialect.nextInSequence(JOURNAL_SEQUENCE) ?? `(SELECT COALESCE(MAX("seq"), 0) FROM ${database.dialect.table('Journal')}) + ${ordinal}`;
}

/**
 * The tenant's newest seq, in SQL (`tenant`: its placeholder or column): what a checkpoint, timer plan or crowd change
 * written in the same transaction follows.
 */
export function tenantMaxSeqSql(database: Database, tenant: string): string {
  return `(SELECT COALESCE(MAX(m."seq"), 0) FROM ${database.dialect.table('Journal')} m WHERE m."tenantId" = ${tenant})`;
}

/** Whether seqs continue from the journal's max (SQLite), so its newest row must stay to keep them from repeating. */
export function seqsFollowTheNewestRow(database: Database): boolean {
  return database.dialect.nextInSequence(JOURNAL_SEQUENCE) === null;
}
