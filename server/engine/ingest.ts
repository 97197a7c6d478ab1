// Ingest: validate a whole batch of events by hand (one pass, no per-event schema objects), then append it to
// the tenant's partitioned input log in ONE transaction, so a batch is either all durable or not there at all.
import type { Principal } from '../auth';
import { MAX_USER_ID } from '../crowd/bitmap';
import { AppError } from '../errors';
import { raw } from '../storage/raw';
import { encodeEvents } from './log-codec';
import { rememberAppended } from './recent-log';
import type { LoggedEvent } from './types';
import { dialect } from '../storage/dialect';
import { findTenant, type Tenant } from '../tenants/tenants';

export const MAX_EVENTS_PER_BATCH = 10_000;
export const MAX_EVENT_TYPE_LENGTH = 128;
/** Latest accepted epoch-ms time (the largest a JS Date can hold). */
const MAX_TIME_MS = 8.64e15;
/** A timestamp with a time zone (or a bare date, read as UTC midnight); Date.parse alone accepts far too much. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;
const EVENT_FIELDS = new Set(['user', 'type', 'data', 'time']);
const BODY_FIELDS = new Set(['tenant', 'events']);

export type EventBatch = { tenant?: string; events: LoggedEvent[] };

const invalid = (where: string, problem: string) => new AppError('validation_failed', `${where}: ${problem}`, { path: where });

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

function eventTime(value: unknown, where: string, now: number): number {
  if (value === undefined) return now;
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0 || value > MAX_TIME_MS) throw invalid(where, `expected epoch milliseconds (a non-negative integer), got ${describe(value)}`);
    return value;
  }
  if (typeof value === 'string' && ISO_TIME.test(value)) {
    const ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
    if (Number.isFinite(ms) && ms >= 0) return ms;
  }
  throw invalid(where, `expected an ISO-8601 timestamp with a time zone (e.g. "2026-01-31T12:00:00Z") or epoch milliseconds, got ${describe(value)}`);
}

/**
 * Validates a decoded request body. Every event is checked before anything is written; the first problem is
 * thrown as a 400 naming its place (`events[17].user: …`). `now` stamps events sent without a time.
 */
export function parseEventBatch(body: unknown, now: number): EventBatch {
  if (!isPlainObject(body)) throw invalid('body', `expected an object {tenant?, events: [...]}, got ${describe(body)}`);
  for (const key in body) if (!BODY_FIELDS.has(key)) throw invalid(key, 'unknown field (expected tenant and events)');
  const { tenant, events } = body;
  if (tenant !== undefined && (typeof tenant !== 'string' || tenant.length === 0)) throw invalid('tenant', `expected a tenant id or name, got ${describe(tenant)}`);
  if (!Array.isArray(events)) throw invalid('events', `expected an array of events, got ${describe(events)}`);
  if (events.length === 0) throw invalid('events', 'the batch is empty; send at least one event');
  if (events.length > MAX_EVENTS_PER_BATCH) {
    throw invalid(`events[${MAX_EVENTS_PER_BATCH}]`, `a batch holds at most ${MAX_EVENTS_PER_BATCH} events; this one has ${events.length}`);
  }
  const parsed = new Array<LoggedEvent>(events.length);
  for (let i = 0; i < events.length; i++) {
    const event: unknown = events[i];
    if (!isPlainObject(event)) throw invalid(`events[${i}]`, `expected an object {user, type, data?, time?}, got ${describe(event)}`);
    for (const key in event) if (!EVENT_FIELDS.has(key)) throw invalid(`events[${i}].${key}`, 'unknown field (expected user, type, data, time)');
    const { user, type, data } = event;
    if (typeof user !== 'number' || !Number.isInteger(user) || user < 0 || user > MAX_USER_ID) {
      throw invalid(`events[${i}].user`, `expected an integer user id from 0 to ${MAX_USER_ID}, got ${describe(user)}`);
    }
    if (typeof type !== 'string' || type.length === 0 || type.length > MAX_EVENT_TYPE_LENGTH) {
      throw invalid(`events[${i}].type`, `expected a non-empty string of at most ${MAX_EVENT_TYPE_LENGTH} characters, got ${describe(type)}`);
    }
    if (data !== undefined && !isPlainObject(data)) throw invalid(`events[${i}].data`, `expected an object, got ${describe(data)}`);
    parsed[i] = { user, type, data: (data as Record<string, unknown> | undefined) ?? {}, time: eventTime(event.time, `events[${i}].time`, now) };
  }
  return tenant === undefined ? { events: parsed } : { tenant, events: parsed };
}

/** The events of one batch grouped by input partition (`user % partitions`), in their order within the batch. */
export function partitionEvents(events: LoggedEvent[], partitions: number): Map<number, LoggedEvent[]> {
  const groups = new Map<number, LoggedEvent[]>();
  for (const event of events) {
    const partition = event.user % partitions;
    let group = groups.get(partition);
    if (!group) groups.set(partition, (group = []));
    group.push(event);
  }
  return groups;
}

const MAX_APPEND_ATTEMPTS = 20;

/** A unique-key clash on the log's (tenant, partition, offset): another writer took the offset first. */
function isOffsetClash(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: string; message?: string };
  const text = `${code ?? ''} ${message ?? ''}`;
  return /23505|SQLITE_CONSTRAINT|UNIQUE constraint failed|duplicate key value/i.test(text);
}

/**
 * Appends a validated batch: one EventLog row per touched partition, at that partition's previous max offset + 1.
 * Resolves once the batch is durable; an acknowledged batch is never lost, a failed one left no row.
 *
 * Group commit: batches of one tenant are written one transaction at a time in this process (racing our own
 * requests for offsets would only cost retries), and batches that arrived while a commit was in flight are
 * written together by the next one — still one row per partition per batch, in arrival order.
 */
export function appendEvents(tenantId: string, partitions: number, events: LoggedEvent[]): Promise<number> {
  if (events.length === 0) return Promise.resolve(0);
  return new Promise((resolve, reject) => {
    let queue = tenantQueues.get(tenantId);
    if (!queue) tenantQueues.set(tenantId, (queue = { waiting: [], writing: false }));
    queue.waiting.push({ partitions, events, resolve, reject });
    if (!queue.writing) void drain(tenantId, queue);
  });
}

type Waiting = { partitions: number; events: LoggedEvent[]; resolve: (accepted: number) => void; reject: (error: unknown) => void };
type TenantQueue = { waiting: Waiting[]; writing: boolean };
const tenantQueues = new Map<string, TenantQueue>();
/** Bounds one group commit (one transaction). */
const MAX_ROWS_PER_STATEMENT = 512;
const MAX_EVENTS_PER_STATEMENT = 50_000;

async function drain(tenantId: string, queue: TenantQueue): Promise<void> {
  queue.writing = true;
  while (queue.waiting.length > 0) {
    const group = takeGroup(queue.waiting);
    try {
      await insertBatches(tenantId, group);
      for (const batch of group) batch.resolve(batch.events.length);
    } catch (error) {
      for (const batch of group) batch.reject(error);
    }
  }
  queue.writing = false;
  tenantQueues.delete(tenantId);
}

function takeGroup(waiting: Waiting[]): Waiting[] {
  let rows = 0;
  let events = 0;
  let count = 0;
  for (const batch of waiting) {
    const batchRows = Math.min(batch.partitions, batch.events.length);
    if (count > 0 && (rows + batchRows > MAX_ROWS_PER_STATEMENT || events + batch.events.length > MAX_EVENTS_PER_STATEMENT)) break;
    rows += batchRows;
    events += batch.events.length;
    count++;
  }
  return waiting.splice(0, count);
}

/**
 * One transaction for every row of the given batches, so they are atomic together. Each row takes its partition's
 * committed max offset + 1 (earlier rows of the same transaction included); rows are written in partition order so
 * concurrent writers lock in the same order, and a writer in another process that took an offset first makes the
 * transaction fail on the primary key: it is simply retried.
 */
async function insertBatches(tenantId: string, batches: Waiting[]): Promise<void> {
  const rows: LogRowToWrite[] = [];
  for (const batch of batches) for (const [partition, events] of partitionEvents(batch.events, batch.partitions)) rows.push({ partition, events });
  rows.sort((a, b) => a.partition - b.partition); // stable: batches keep their arrival order within a partition
  const write = dialect().roundTripPerStatement ? insertAsOneStatement : insertRowByRow;
  for (let attempt = 1; ; attempt++) {
    try {
      const offsets = await write(tenantId, rows);
      rows.forEach((row, i) => rememberAppended(tenantId, row.partition, offsets[i], row.events));
      return;
    } catch (error) {
      if (!isOffsetClash(error) || attempt >= MAX_APPEND_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * attempt));
    }
  }
}

type LogRowToWrite = { partition: number; events: LoggedEvent[] };

/** In-process statements (SQLite): one INSERT per row in one transaction (each statement sees the rows before it). */
async function insertRowByRow(tenantId: string, rows: LogRowToWrite[]): Promise<number[]> {
  const eventLog = dialect().table('EventLog');
  const statements = rows.map(({ partition, events }) => {
    const { params, bind } = dialect().parameters();
    const offset = `(SELECT COALESCE(MAX("offset"), 0) + 1 FROM ${eventLog} WHERE "tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)})`;
    const sql = `INSERT INTO ${eventLog} ("tenantId", "partition", "offset", "events", "count") VALUES (${bind(tenantId)}, ${bind(partition)}, ${offset}, ${bind(encodeEvents(events))}, ${bind(events.length)}) RETURNING "offset"`;
    return { sql, params, returning: true };
  });
  const results = await (await raw()).transaction(statements);
  return results.map(([row]) => Number(row.offset));
}

/**
 * Statements over the network (PostgreSQL): every row in ONE statement (one round trip, atomic without BEGIN/COMMIT). A statement sees only the
 * rows committed before it, so each row's offset is its partition's max + its rank among this statement's rows.
 */
async function insertAsOneStatement(tenantId: string, rows: LogRowToWrite[]): Promise<number[]> {
  const eventLog = dialect().table('EventLog');
  const rank = new Map<number, number>();
  const ranks = rows.map((row) => {
    const next = (rank.get(row.partition) ?? 0) + 1;
    rank.set(row.partition, next);
    return next;
  });
  const { params, bind } = dialect().parameters();
  const tenant = bind(tenantId);
  // Multi-row VALUES, not unnest(): the blobs then travel as binary parameters instead of one hex array literal.
  const values = rows.map((row, i) => {
    const partition = bind(row.partition);
    const offset = `COALESCE((SELECT MAX("offset") FROM ${eventLog} WHERE "tenantId" = ${tenant} AND "partition" = ${partition}), 0) + ${bind(ranks[i])}`;
    return `(${tenant}, ${partition}, ${offset}, ${bind(encodeEvents(row.events))}, ${bind(row.events.length)})`;
  });
  const sql = `INSERT INTO ${eventLog} ("tenantId", "partition", "offset", "events", "count") VALUES ${values.join(', ')} RETURNING "partition", "offset"`;
  const written = await (await raw()).query<{ partition: number; offset: string | number }>(sql, params);
  // Per partition the offsets are consecutive in rank order: the k-th smallest belongs to the row of rank k.
  const offsetsOf = new Map<number, number[]>();
  for (const row of written) {
    let offsets = offsetsOf.get(row.partition);
    if (!offsets) offsetsOf.set(row.partition, (offsets = []));
    offsets.push(Number(row.offset));
  }
  for (const offsets of offsetsOf.values()) offsets.sort((a, b) => a - b);
  return rows.map((row, i) => offsetsOf.get(row.partition)![ranks[i] - 1]);
}

/**
 * The tenant a call acts on: an API key's own tenant (naming another one gets 404, like a tenant that does not
 * exist), or with the admin token the tenant named by `ref`, which is then required.
 */
export async function callerTenant(principal: Principal, ref: string | undefined): Promise<Tenant> {
  if (principal.kind === 'admin') {
    if (ref === undefined) throw invalid('tenant', 'required with the admin token (a tenant id or name)');
    return findTenant(principal, ref);
  }
  return findTenant(principal, ref ?? principal.tenantId);
}

/**
 * Partition counts of tenants seen by this process. A tenant's partition count never changes, and a valid API key
 * proves its tenant exists (keys are deleted with their tenant), so key callers skip the tenant lookup.
 */
const partitionsOf = new Map<string, number>();

async function ingestTarget(principal: Principal, ref: string | undefined): Promise<{ id: string; partitions: number }> {
  if (principal.kind === 'tenant' && (ref === undefined || ref === principal.tenantId)) {
    const partitions = partitionsOf.get(principal.tenantId);
    if (partitions !== undefined) return { id: principal.tenantId, partitions };
  }
  // The tenant of an event batch is a body field, so an unknown one (or one the key may not see) is bad input: 400.
  const tenant = await callerTenant(principal, ref).catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'not_found') throw invalid('tenant', `unknown tenant "${ref}"`);
    throw error;
  });
  partitionsOf.set(tenant.id, tenant.partitions);
  return tenant;
}

/** The whole ingest call: validates the batch, resolves the tenant, then appends durably. */
export async function ingest(principal: Principal, body: unknown, now: number): Promise<{ tenantId: string; accepted: number }> {
  const batch = parseEventBatch(body, now);
  const tenant = await ingestTarget(principal, batch.tenant);
  return { tenantId: tenant.id, accepted: await appendEvents(tenant.id, tenant.partitions, batch.events) };
}
