// Exactly-once ingest: what a tenant's Idempotency-Keys and event ids have already appended, within the dedupe window.
//
// The durable truth is the IngestRecord table: one row per request that carried a key or event ids, written in the
// same transaction as that request's EventLog rows (ingest-commit.ts), so a crash can neither lose an acknowledged
// request nor let its retry append it twice. This process keeps the live rows in memory (keys and ids of the window)
// and reads the rows other processes wrote since (`seq` > the last one seen) at least every minute. Every writer
// takes seq = last seen + 1, so a writer that missed another's row clashes on the primary key, reads the winner's row
// and decides again: no lock, no extra round trip per commit, and no per-event index lookups in the database.
import { runtime } from '../runtime';
import { raw } from '../storage/raw';
import { dialect } from '../storage/dialect';

/** How long a key or event id is remembered: at least 24 hours; expired rows go at the next cleanup (≤ 10 min later). */
export const DEDUPE_WINDOW_MS = 24 * 60 * 60 * 1000;
const CLEANUP_EVERY_MS = 10 * 60 * 1000;
/** A process reads the other processes' rows before deciding at least this often (and whenever it lost a race). */
const CATCH_UP_EVERY_MS = 60 * 1000;

/** What a keyed request was first answered. */
export type RecordedAnswer = { accepted: number; duplicates: number };

type KeyEntry = RecordedAnswer & { seq: number; requestHash: string };
type LiveRecord = { seq: number; createdAtMs: number; key: string | null; eventIds: string[] };

/** One new IngestRecord row, decided by a group commit. */
export type NewRecord = RecordedAnswer & { seq: number; key: string | null; requestHash: string | null; eventIds: string[]; createdAtMs: number };

export class TenantDedupe {
  lastSeq = 0;
  private readonly keys = new Map<string, KeyEntry>();
  private readonly ids = new Set<string>();
  /** Live records in seq order, for expiry. */
  private readonly records: LiveRecord[] = [];
  private recordsStart = 0;
  private lastCleanupMs = 0;
  /** Wall time of the last catch-up read; -Infinity forces the next one (start, or after losing a race). */
  private caughtUpAt = Number.NEGATIVE_INFINITY;

  constructor(readonly tenantId: string) {}

  answerFor(key: string): KeyEntry | undefined {
    return this.keys.get(key);
  }

  /**
   * Takes `id` for an event about to be appended: false when it is logged already (or claimed earlier in the group
   * being planned). A claim holds until the group commits (`learn`) or fails (`release`), so a repeat later in the same
   * group is caught by the same lookup, without a second set.
   */
  claimId(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    return true;
  }

  /** Gives back the ids of records whose group did not commit: they are not logged after all. */
  release(records: NewRecord[]): void {
    for (const record of records) for (const id of record.eventIds) this.ids.delete(id);
  }

  /** Adds committed rows (read back from the table, or just written by this process: their ids are claimed already). */
  learn(record: NewRecord, claimed = false): void {
    if (record.seq <= this.lastSeq) return;
    this.lastSeq = record.seq;
    if (record.key !== null)
      this.keys.set(record.key, { seq: record.seq, requestHash: record.requestHash ?? '', accepted: record.accepted, duplicates: record.duplicates });
    if (!claimed) for (const id of record.eventIds) this.ids.add(id);
    this.records.push({ seq: record.seq, createdAtMs: record.createdAtMs, key: record.key, eventIds: record.eventIds });
  }

  /**
   * Before a decision: reads what other processes wrote, unless this process read less than CATCH_UP_EVERY_MS ago.
   * Skipping is safe because rows that young are never cleaned up, so the seqs above ours have no gaps: if another
   * process wrote any, the next seq is taken and our write clashes on it, and the retry reads them (`forget`).
   */
  async catchUpIfStale(): Promise<void> {
    if (Date.now() - this.caughtUpAt < CATCH_UP_EVERY_MS) return;
    await this.catchUp();
  }

  /** Makes the next decision read the table first (another writer won a race: its rows are unknown here). */
  stale(): void {
    this.caughtUpAt = Number.NEGATIVE_INFINITY;
  }

  /** Reads the rows written since the last one this process knows (all live rows, the first time). */
  async catchUp(): Promise<void> {
    this.caughtUpAt = Date.now();
    const { params, bind } = dialect().parameters();
    const sql = `SELECT "seq", "key", "requestHash", "accepted", "duplicates", "eventIds", "createdAtMs" FROM ${dialect().table('IngestRecord')} WHERE "tenantId" = ${bind(this.tenantId)} AND "seq" > ${bind(this.lastSeq)} ORDER BY "seq"`;
    const rows = await (await raw()).query<StoredRecord>(sql, params);
    for (const row of rows) {
      this.learn({
        seq: Number(row.seq),
        key: row.key,
        requestHash: row.requestHash,
        accepted: Number(row.accepted),
        duplicates: Number(row.duplicates),
        eventIds: row.eventIds === null ? [] : (JSON.parse(row.eventIds) as string[]),
        createdAtMs: Number(row.createdAtMs),
      });
    }
  }

  /**
   * Every CLEANUP_EVERY_MS: deletes the rows older than the window (the newest row stays, without its key and ids,
   * so seqs continue from it) and forgets them here at the same moment, so memory and table agree on what is live.
   */
  async cleanUp(now: number): Promise<void> {
    if (now - this.lastCleanupMs < CLEANUP_EVERY_MS) return;
    this.lastCleanupMs = now;
    const cutoff = now - DEDUPE_WINDOW_MS;
    const table = dialect().table('IngestRecord');
    const rawDb = await raw();
    const removed = dialect().parameters();
    await rawDb.execute(
      `DELETE FROM ${table} WHERE "tenantId" = ${removed.bind(this.tenantId)} AND "createdAtMs" < ${removed.bind(cutoff)} AND "seq" < ${removed.bind(this.lastSeq)}`,
      removed.params,
    );
    const kept = dialect().parameters();
    await rawDb.execute(
      `UPDATE ${table} SET "key" = NULL, "eventIds" = NULL WHERE "tenantId" = ${kept.bind(this.tenantId)} AND "createdAtMs" < ${kept.bind(cutoff)}`,
      kept.params,
    );
    while (this.recordsStart < this.records.length && this.records[this.recordsStart].createdAtMs < cutoff) {
      const expired = this.records[this.recordsStart++];
      if (expired.key !== null && this.keys.get(expired.key)?.seq === expired.seq) this.keys.delete(expired.key);
      for (const id of expired.eventIds) this.ids.delete(id);
    }
    if (this.recordsStart > 1024 && this.recordsStart * 2 > this.records.length) this.records.splice(0, this.recordsStart), (this.recordsStart = 0);
  }
}

type StoredRecord = {
  seq: number | string;
  key: string | null;
  requestHash: string | null;
  accepted: number;
  duplicates: number;
  eventIds: string | null;
  createdAtMs: number | string;
};

/** This process's dedupe state of a tenant (kept in the process runtime). */
export function tenantDedupe(tenantId: string): TenantDedupe {
  const tenants = runtime().ingestDedupe;
  let state = tenants.get(tenantId);
  if (!state) tenants.set(tenantId, (state = new TenantDedupe(tenantId)));
  return state;
}

/** The INSERT of new records for the group commit's statement; `bind` adds each value to that statement's parameters. */
export function recordInsert(tenantId: string, records: NewRecord[], bind: (value: unknown) => string): string {
  const values = records.map(
    (r) =>
      `(${bind(tenantId)}, ${bind(r.seq)}, ${bind(r.key)}, ${bind(r.requestHash)}, ${bind(r.accepted)}, ${bind(r.duplicates)}, ${bind(r.eventIds.length === 0 ? null : JSON.stringify(r.eventIds))}, ${bind(r.createdAtMs)})`,
  );
  return `INSERT INTO ${dialect().table('IngestRecord')} ("tenantId", "seq", "key", "requestHash", "accepted", "duplicates", "eventIds", "createdAtMs") VALUES ${values.join(', ')}`;
}
