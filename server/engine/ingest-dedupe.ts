// Exactly-once ingest: what a tenant's Idempotency-Keys and event ids have already appended, within the dedupe window.
//
// The durable truth is the IngestRecord table: one row per request that carried a key or event ids, written in the
// same transaction as that request's EventLog rows (ingest-commit.ts), so a crash can neither lose an acknowledged
// request nor let its retry append it twice. This process keeps the live rows in memory (keys and ids of the window)
// and reads the rows other processes wrote since (`seq` > the last one seen) at least every minute. Every writer
// takes seq = last seen + 1, so a writer that missed another's row clashes on the primary key, reads the winner's row
// and decides again: no lock, no extra round trip per commit, and no per-event index lookups in the database.
// The ids are held and stored as the 128-bit hashes the request thread computed (ingest-id-table.ts), each table entry
// naming its record and position; no id string reaches this thread. Rows written before the hashes were stored carry
// the ids' JSON instead, hashed here when read.
import type { IngestState } from './ingest-state';
import { hashIds, ID_HASH_WORDS, IdTable } from './ingest-id-table';
import type { Database } from '../storage/database';
import { expireIngestRecords, ingestRecordsAfter, type StoredIngestRecord } from '../storage/ingest-records';

/** How long a key or event id is remembered: at least 24 hours; expired rows go at the next cleanup (≤ 10 min later). */
export const DEDUPE_WINDOW_MS = 24 * 60 * 60 * 1000;
const CLEANUP_EVERY_MS = 10 * 60 * 1000;
/** A process reads the other processes' rows before deciding at least this often (and whenever it lost a race). */
const CATCH_UP_EVERY_MS = 60 * 1000;

/** What a keyed request was first answered. */
export type RecordedAnswer = { accepted: number; duplicates: number };

/**
 * The event ids of a request by position (its rows' events in order): `hashes` ID_HASH_WORDS words each (all 0 where
 * an event has none, see ingest-id-table.ts).
 */
export type RequestIds = { hashes: Uint32Array };

type KeyEntry = RecordedAnswer & { seq: number; requestHash: string };
type LiveRecord = { seq: number; createdAtMs: number; key: string | null; ids: RequestIds | undefined };

/**
 * One new IngestRecord row, decided by a group commit: `eventHashes` the hashes of the ids it appends (16 bytes each),
 * `entry` its number here (`open`).
 */
export type NewRecord = RecordedAnswer & {
  seq: number;
  key: string | null;
  requestHash: string | null;
  eventHashes: Uint8Array<ArrayBuffer> | null;
  createdAtMs: number;
  entry?: number;
};

export class TenantDedupe {
  lastSeq = 0;
  private readonly keys = new Map<string, KeyEntry>();
  /** Every live id, named by its record's number and position there. */
  private readonly ids = new IdTable((entry, position, other, otherPosition) => this.sameTail(entry, position, other, otherPosition));
  /** Live records in seq order, for expiry, then those of the group being planned; record n is records[n - recordsBase]. */
  private records: LiveRecord[] = [];
  private recordsStart = 0;
  private recordsBase = 0;
  private lastCleanupMs = 0;
  /** Wall time of the last catch-up read; -Infinity forces the next one (start, or after losing a race). */
  private caughtUpAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly database: Database,
    readonly tenantId: string,
  ) {}

  answerFor(key: string): KeyEntry | undefined {
    return this.keys.get(key);
  }

  /** A record for a batch of the group being planned, whose ids it then claims (`claimId`); its number. */
  open(ids: RequestIds | undefined, createdAtMs: number): number {
    this.records.push({ seq: 0, createdAtMs, key: null, ids });
    return this.recordsBase + this.records.length - 1;
  }

  /** The newest record opened goes again: its batch appends nothing and has no key. */
  drop(entry: number): void {
    if (entry === this.recordsBase + this.records.length - 1) this.records.pop();
  }

  /**
   * Takes the id at `position` of an opened record: false when it is logged already (or claimed earlier in the group
   * being planned). A claim holds until the group commits (`learn`) or fails (`release`), so a repeat later in the same
   * group is caught by the same lookup.
   */
  claimId(entry: number, position: number): boolean {
    const { hashes } = this.records[entry - this.recordsBase].ids!;
    return this.ids.claim(hashes[ID_HASH_WORDS * position], hashes[ID_HASH_WORDS * position + 1], entry, position);
  }

  /** The hashes (16 bytes each) of the ids of an opened record but those at `skipped` (duplicates), as stored. */
  storedHashes(entry: number, skipped: number[]): Uint8Array<ArrayBuffer> {
    const { hashes } = this.records[entry - this.recordsBase].ids!;
    const left = new Set(skipped);
    const out = new Uint32Array(hashes.length);
    let at = 0;
    for (let position = 0; position < hashes.length / ID_HASH_WORDS; position++) {
      const word = ID_HASH_WORDS * position;
      if (left.has(position) || (hashes[word] === 0 && hashes[word + 1] === 0)) continue;
      for (let w = word; w < word + ID_HASH_WORDS; w++) out[at++] = hashes[w];
    }
    return new Uint8Array(out.buffer, 0, at * 4);
  }

  /** Gives back the records of a group that did not commit: their ids are not logged after all. */
  release(records: NewRecord[]): void {
    const opened = records.filter((r) => r.entry !== undefined).map((r) => r.entry!);
    if (opened.length === 0) return;
    for (const entry of opened) this.forgetIds(entry);
    this.records.length = Math.min(...opened) - this.recordsBase;
  }

  /** Adds committed rows: read back from the table, or just written by this process (opened here: `entry`). */
  learn(record: NewRecord | StoredIngestRecord): void {
    if (record.seq <= this.lastSeq) return;
    this.lastSeq = record.seq;
    if (record.key !== null)
      this.keys.set(record.key, { seq: record.seq, requestHash: record.requestHash ?? '', accepted: record.accepted, duplicates: record.duplicates });
    if ('entry' in record && record.entry !== undefined) {
      const live = this.records[record.entry - this.recordsBase];
      live.seq = record.seq;
      live.key = record.key;
      return;
    }
    const hashes = storedIdHashes(record);
    this.records.push({ seq: record.seq, createdAtMs: record.createdAtMs, key: record.key, ids: hashes && { hashes } });
    const entry = this.recordsBase + this.records.length - 1;
    if (hashes) for (let i = 0; i < hashes.length / ID_HASH_WORDS; i++) this.ids.add(hashes[ID_HASH_WORDS * i], hashes[ID_HASH_WORDS * i + 1], entry, i);
  }

  /**
   * Before a decision: reads what other processes wrote, unless this process read less than CATCH_UP_EVERY_MS ago.
   * Skipping is safe because rows that young are never cleaned up, so the seqs above ours have no gaps: if another
   * process wrote any, the next seq is taken and our write clashes on it, and the retry reads them (`forget`).
   */
  async catchUpIfStale(now: number): Promise<void> {
    if (now - this.caughtUpAt < CATCH_UP_EVERY_MS) return;
    await this.catchUp(now);
  }

  /** Makes the next decision read the table first (another writer won a race: its rows are unknown here). */
  stale(): void {
    this.caughtUpAt = Number.NEGATIVE_INFINITY;
  }

  /** Reads the rows written since the last one this process knows (all live rows, the first time). */
  async catchUp(now: number): Promise<void> {
    this.caughtUpAt = now;
    for (const record of await ingestRecordsAfter(this.database, this.tenantId, this.lastSeq)) this.learn(record);
  }

  /**
   * Every CLEANUP_EVERY_MS: deletes the rows older than the window (the newest row stays, without its key and ids,
   * so seqs continue from it) and forgets them here at the same moment, so memory and table agree on what is live.
   */
  async cleanUp(now: number): Promise<void> {
    if (now - this.lastCleanupMs < CLEANUP_EVERY_MS) return;
    this.lastCleanupMs = now;
    const cutoff = now - DEDUPE_WINDOW_MS;
    await expireIngestRecords(this.database, this.tenantId, cutoff, this.lastSeq);
    while (this.recordsStart < this.records.length && this.records[this.recordsStart].createdAtMs < cutoff) {
      const expired = this.records[this.recordsStart];
      if (expired.key !== null && this.keys.get(expired.key)?.seq === expired.seq) this.keys.delete(expired.key);
      this.forgetIds(this.recordsBase + this.recordsStart++);
      expired.ids = undefined;
    }
    if (this.recordsStart > 1024 && this.recordsStart * 2 > this.records.length) {
      this.records = this.records.slice(this.recordsStart);
      this.recordsBase += this.recordsStart;
      this.recordsStart = 0;
    }
  }

  /** Removes a record's ids from the table (those it holds: a duplicate was never added). */
  private forgetIds(entry: number): void {
    const hashes = this.records[entry - this.recordsBase].ids?.hashes;
    if (!hashes) return;
    for (let i = 0; i < hashes.length; i += ID_HASH_WORDS)
      if (hashes[i] !== 0 || hashes[i + 1] !== 0) this.ids.remove(hashes[i], hashes[i + 1], entry, i / ID_HASH_WORDS);
  }

  /** Whether the ids at the two places agree in the hash words the table does not probe with. */
  private sameTail(entry: number, position: number, other: number, otherPosition: number): boolean {
    const one = this.records[entry - this.recordsBase].ids!.hashes;
    const two = this.records[other - this.recordsBase].ids!.hashes;
    for (let w = 2; w < ID_HASH_WORDS; w++) if (one[ID_HASH_WORDS * position + w] !== two[ID_HASH_WORDS * otherPosition + w]) return false;
    return true;
  }
}

/** A stored record's id hashes (ID_HASH_WORDS words each), from its bytes or (an older row) its ids' JSON; undefined: none. */
function storedIdHashes(record: NewRecord | StoredIngestRecord): Uint32Array | undefined {
  if (record.eventHashes) {
    const { eventHashes: bytes } = record;
    // Copied: a driver's Buffer may sit at an offset a Uint32Array cannot start at.
    return new Uint32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  }
  return 'eventIds' in record && record.eventIds !== null ? hashIds(JSON.parse(record.eventIds) as string[]) : undefined;
}

/** This thread's dedupe state of a tenant (kept in its ingest state). */
export function tenantDedupe(database: Database, ingestState: IngestState, tenantId: string): TenantDedupe {
  const tenants = ingestState.ingestDedupe;
  let state = tenants.get(tenantId);
  if (!state) tenants.set(tenantId, (state = new TenantDedupe(database, tenantId)));
  return state;
}
