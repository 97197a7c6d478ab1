// Group commit of validated event batches into the tenant's partitioned input log, with the dedupe records of
// Idempotency-Keys and event ids (ingest-dedupe.ts) in the same transaction. Batches arrive encoded (ingest-encode.ts,
// done where they were parsed): rows are written as they came, and re-encoded only when some of their events' ids
// turn out to be logged already.
//
// Batches of one tenant are written one transaction at a time in this process (racing our own requests for offsets
// would only cost retries), and batches that arrived while a commit was in flight are written together by the next
// one: still one row per partition per batch, in arrival order. A batch that cannot be encoded, or whose key was
// used for another body, is answered on its own before the write; a write that fails for another reason is retried
// batch by batch, so one bad batch never fails its neighbours (each failure answers only its own request).
import type { IngestState } from './ingest-state';
import { AppError } from '../errors';
import { appendLogRows, isAppendClash, type LogRowToWrite } from '../storage/event-log-append';
import { DEDUPE_WINDOW_MS, tenantDedupe, type NewRecord, type RecordedAnswer, type TenantDedupe } from './ingest-dedupe';
import type { Database } from '../storage/database';
import { describeStorageError, isTransientStorageError, retryTransient } from '../storage/transient';
import type { UserPartitioning } from './partitioning';
import { encodeRequest, type EncodedRequest, type EncodedRow, type IngestRequest } from './ingest-encode';
import { decodeEvents, encodeEvents } from './log-codec';
import { ID_HASH_WORDS } from './ingest-id-table';

/** `accepted`: events of the request now in the log; `duplicates`: those skipped as already logged (by event id). */
export type IngestResult = RecordedAnswer & { replayed: boolean };

type Waiting = {
  request: EncodedRequest;
  now: number;
  settled: boolean;
  resolve: (result: IngestResult) => void;
  reject: (error: unknown) => void;
};
/** A tenant's batches waiting for the writer, written through the Database of the append that opened the queue. */
export type TenantQueue = { database: Database; waiting: Waiting[]; writing: boolean };

/** Bounds one group commit (one transaction). */
const MAX_ROWS_PER_STATEMENT = 512;
const MAX_EVENTS_PER_STATEMENT = 50_000;
const MAX_APPEND_ATTEMPTS = 20;

/** A tenant as ingest needs it: its id and how its users map to its partitions (a Tenant row is one). */
export type IngestTenant = { readonly id: string } & UserPartitioning;

/** `appendEncoded` of a request encoded here (in-process callers: tests, benchmarks, the engine's own appends). */
export function appendRequest(database: Database, ingestState: IngestState, tenant: IngestTenant, request: IngestRequest, now: number): Promise<IngestResult> {
  let encoded: EncodedRequest;
  try {
    encoded = encodeRequest(request, tenant);
  } catch (error) {
    return Promise.reject(error);
  }
  return appendEncoded(database, ingestState, tenant.id, encoded, now);
}

/**
 * Appends a validated, encoded request: one EventLog row per touched partition, at that partition's previous max
 * offset + 1. Resolves once it is durable (or recognised as a retry of a durable one); an acknowledged batch is never
 * lost, a failed one left no row. `now` stamps its dedupe record.
 */
export function appendEncoded(database: Database, ingestState: IngestState, tenantId: string, request: EncodedRequest, now: number): Promise<IngestResult> {
  return new Promise((resolve, reject) => {
    const queues = ingestState.ingestQueues;
    let queue = queues.get(tenantId);
    if (!queue) queues.set(tenantId, (queue = { database, waiting: [], writing: false }));
    queue.waiting.push({ request, now, settled: false, resolve, reject });
    if (!queue.writing) void drain(ingestState, tenantId, queue);
  });
}

async function drain(ingestState: IngestState, tenantId: string, queue: TenantQueue): Promise<void> {
  queue.writing = true;
  while (queue.waiting.length > 0) await commitGroup(queue.database, ingestState, tenantId, takeGroup(queue.waiting));
  queue.writing = false;
  ingestState.ingestQueues.delete(tenantId);
}

function takeGroup(waiting: Waiting[]): Waiting[] {
  let rows = 0;
  let events = 0;
  let count = 0;
  for (const batch of waiting) {
    const batchRows = batch.request.rows.length;
    if (count > 0 && (rows + batchRows > MAX_ROWS_PER_STATEMENT || events + batch.request.count > MAX_EVENTS_PER_STATEMENT)) break;
    rows += batchRows;
    events += batch.request.count;
    count++;
  }
  return waiting.splice(0, count);
}

async function commitGroup(database: Database, ingestState: IngestState, tenantId: string, group: Waiting[]): Promise<void> {
  // A transient storage error wrote nothing of the group (one transaction): the group goes again, decided anew, before
  // any batch is answered 503; past the patience, the batches are tried alone like after any other failure.
  const write = (batches: Waiting[]) => retryTransient(() => writeGroup(database, ingestState, tenantId, batches));
  try {
    await write(group);
  } catch (error) {
    if (group.length === 1) return settleFailed(group[0], error);
    // Which batch broke the transaction is unknown: each goes again on its own, so only that one fails.
    for (const batch of group) await write([batch]).catch((alone: unknown) => settleFailed(batch, alone));
  }
}

function settleFailed(batch: Waiting, error: unknown): void {
  if (batch.settled) return;
  batch.settled = true;
  batch.reject(storageFailure(error));
}

/**
 * A failed write as the caller sees it: bad input (400) when the database refused the data; a transient storage error
 * (server/storage/transient.ts) that outlasted retryTransient is a 503 to send again; anything else goes up as it is
 * (the error table makes a tenant deleted meanwhile a 404, the rest a 500), since sending it again fails the same way.
 */
function storageFailure(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const { code, message } = error as { code?: unknown; message?: unknown };
  // PostgreSQL classes 22 (data exception) and 54 (program limit exceeded, e.g. too deeply nested) are the data's fault.
  if (typeof code === 'string' && /^(22|54)/.test(code))
    return new AppError('validation_failed', `events: the batch cannot be stored: ${String(message)}`, { path: 'events' });
  if (!isTransientStorageError(error)) return error;
  console.warn('[crowdflow] event batch not stored:', describeStorageError(error));
  return new AppError('unavailable', 'The event log could not be written; nothing of this batch was stored, send it again');
}

/** One transaction for the unsettled batches of `group`, retried from the dedupe decision when another writer won a race. */
async function writeGroup(database: Database, ingestState: IngestState, tenantId: string, group: Waiting[]): Promise<void> {
  const deduplicating = group.some((b) => b.request.key !== undefined || b.request.ids !== undefined);
  const dedupe = deduplicating ? tenantDedupe(database, ingestState, tenantId) : undefined;
  for (let attempt = 1; ; attempt++) {
    const pending = group.filter((b) => !b.settled);
    if (pending.length === 0) return;
    if (dedupe) {
      const now = Math.max(...pending.map((b) => b.now));
      await dedupe.catchUpIfStale(now);
      // Before deciding, so a key or id older than the window counts as new.
      await dedupe.cleanUp(now).catch((error: unknown) => console.warn('[crowdflow] ingest dedupe cleanup failed:', error));
    }
    const plan = planGroup(pending, dedupe);
    let offsets: number[];
    try {
      offsets = await appendLogRows(database, tenantId, plan.rows, plan.records);
    } catch (error) {
      dedupe?.release(plan.records);
      if (!isAppendClash(error) || attempt >= MAX_APPEND_ATTEMPTS) throw error;
      dedupe?.stale();
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * attempt));
      continue;
    }
    for (const record of plan.records) dedupe!.learn(record);
    plan.rows.forEach((row, i) => ingestState.recentLog.remember(tenantId, row.partition, offsets[i], row.bytes, row.count));
    for (const [batch, answer] of plan.answers) {
      batch.settled = true;
      batch.resolve(answer);
    }
    return;
  }
}

type GroupPlan = { rows: LogRowToWrite[]; records: NewRecord[]; answers: Map<Waiting, IngestResult> };

/**
 * Decides, in arrival order, what each batch appends: a known key with the same body is answered as the first time
 * (nothing appended), with another body it is refused; events whose id is already logged (or earlier in the group)
 * are skipped. Batches refused here are settled at once.
 */
function planGroup(pending: Waiting[], dedupe: TenantDedupe | undefined): GroupPlan {
  const plan: GroupPlan = { rows: [], records: [], answers: new Map() };
  const groupKeys = new Map<string, RecordedAnswer & { requestHash: string }>();
  let seq = dedupe?.lastSeq ?? 0;
  for (const batch of pending) {
    const { count, rows, key, requestHash = '', ids } = batch.request;
    if (key !== undefined) {
      const known = groupKeys.get(key) ?? dedupe?.answerFor(key);
      if (known && known.requestHash === requestHash) {
        plan.answers.set(batch, { accepted: known.accepted, duplicates: known.duplicates, replayed: true });
        continue;
      }
      if (known) {
        batch.settled = true;
        batch.reject(keyReused(key));
        continue;
      }
    }
    let duplicates = batch.request.duplicates;
    const entry = dedupe && (key !== undefined || ids) ? dedupe.open(ids, batch.now) : undefined;
    const claims: Claims = { made: 0, skipped: [] };
    let position = 0;
    for (const row of rows) {
      const fresh = entry !== undefined && ids ? freshRow(row, ids.hashes, position, entry, dedupe!, claims) : asLogRow(row);
      if (fresh) plan.rows.push(fresh);
      duplicates += row.count - (fresh?.count ?? 0);
      position += row.count;
    }
    const answer = { accepted: count, duplicates };
    if (key !== undefined || claims.made > 0) {
      const eventHashes = claims.made === 0 ? null : dedupe!.storedHashes(entry!, claims.skipped);
      plan.records.push({
        seq: ++seq,
        key: key ?? null,
        requestHash: key === undefined ? null : requestHash,
        eventHashes,
        createdAtMs: batch.now,
        entry,
        ...answer,
      });
      if (key !== undefined) groupKeys.set(key, { requestHash, ...answer });
    } else if (entry !== undefined) dedupe!.drop(entry);
    plan.answers.set(batch, { ...answer, replayed: false });
  }
  plan.rows.sort((a, b) => a.partition - b.partition); // stable: batches keep their arrival order within a partition
  return plan;
}

/** The row's bytes as a Buffer view (a row posted from another thread arrives as a plain Uint8Array; drivers bind Buffers). */
function asLogRow(row: EncodedRow): LogRowToWrite {
  const { bytes } = row;
  return { partition: row.partition, count: row.count, bytes: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
}

/** The ids a batch's rows claimed, and the positions of those already logged. */
type Claims = { made: number; skipped: number[] };

/**
 * The row (its events from `position` on in its request) without those whose id was logged before or claimed
 * earlier in the group (the others' ids are claimed for record `entry`); null when none is left. Events without an id
 * (hash 0:0) are always fresh. Only a row that loses events is decoded and encoded again: retries are rare, and a
 * fresh row is written as it came.
 */
function freshRow(row: EncodedRow, hashes: Uint32Array, position: number, entry: number, dedupe: TenantDedupe, claims: Claims): LogRowToWrite | null {
  let keep: Uint8Array | undefined;
  for (let i = 0, at = position; i < row.count; i++, at++) {
    if (hashes[ID_HASH_WORDS * at] === 0 && hashes[ID_HASH_WORDS * at + 1] === 0) continue;
    if (dedupe.claimId(entry, at)) {
      claims.made++;
      continue;
    }
    (keep ??= new Uint8Array(row.count).fill(1))[i] = 0;
    claims.skipped.push(at);
  }
  if (!keep) return asLogRow(row);
  const events = decodeEvents(row.bytes).filter((_, i) => keep[i] === 1);
  return events.length === 0 ? null : { partition: row.partition, count: events.length, bytes: encodeEvents(events) };
}

const keyReused = (key: string) => {
  const shown = JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}…` : key);
  const window = `within the last ${DEDUPE_WINDOW_MS / 3_600_000} hours`;
  return new AppError(
    'idempotency_key_reused',
    `Idempotency-Key ${shown} was already used for a different request body ${window}; a new batch needs a new key`,
    { path: 'Idempotency-Key' },
  );
};
