// Ingest: validate a whole batch of events by hand (one pass, no per-event schema objects) and encode it by partition
// (prepare: where the request arrived, the request thread for HTTP), then append it to the tenant's partitioned input
// log in ONE transaction (ingest-commit.ts, in the engine thread), so a batch is either all durable or not there at
// all. An Idempotency-Key and per-event ids make a retried request append nothing twice (ingest-dedupe.ts).
import type { IngestState } from './ingest-state';
import { createHash } from 'node:crypto';
import type { Principal } from '../auth';
import { MAX_USER_ID } from '../crowd/bitmap';
import { AppError } from '../errors';
import { parseJsonBody } from '../json-body';
import { callerTenant } from '../tenants/tenants';
import { appendEncoded, appendRequest, type IngestResult, type IngestTenant } from './ingest-commit';
import { encodeRequest, type EncodedRequest } from './ingest-encode';
import type { LoggedEvent } from './types';
import type { Database } from '../storage/database';

export { partitionEvents } from './ingest-encode';

export const MAX_EVENTS_PER_BATCH = 10_000;
export const MAX_EVENT_TYPE_LENGTH = 128;
/** Latest accepted epoch-ms time (the largest a JS Date can hold). */
const MAX_TIME_MS = 8.64e15;
/** A timestamp with a time zone (or a bare date, read as UTC midnight); Date.parse alone accepts far too much. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;
export const MAX_EVENT_ID_LENGTH = 255;
const EVENT_FIELDS: ReadonlySet<string> = new Set(['id', 'user', 'type', 'data', 'time']);
const BODY_FIELDS: ReadonlySet<string> = new Set(['tenant', 'events']);
/** Visible ASCII (0x21–0x7E), as docs/api.md and the error say: no spaces, which a key copied from text may carry. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** What an ingest call answers: the tenant the batch went to, and what of it was appended. */
export type IngestOutcome = { tenantId: string } & IngestResult;

/** A request decoded, validated and encoded where it arrived, for the engine thread to append (`appendPrepared`). */
export type PreparedIngest = { tenantId: string; request: EncodedRequest };

/** `ids` is there when some event has an `id` (then one entry per event, undefined for events without one). */
export type EventBatch = { tenant?: string; events: LoggedEvent[]; ids?: (string | undefined)[] };

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
    if (!Number.isInteger(value) || value < 0 || value > MAX_TIME_MS)
      throw invalid(where, `expected epoch milliseconds (a non-negative integer), got ${describe(value)}`);
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
  if (tenant !== undefined && (typeof tenant !== 'string' || tenant.length === 0))
    throw invalid('tenant', `expected a tenant id or name, got ${describe(tenant)}`);
  if (!Array.isArray(events)) throw invalid('events', `expected an array of events, got ${describe(events)}`);
  if (events.length === 0) throw invalid('events', 'the batch is empty; send at least one event');
  if (events.length > MAX_EVENTS_PER_BATCH) {
    throw invalid(`events[${MAX_EVENTS_PER_BATCH}]`, `a batch holds at most ${MAX_EVENTS_PER_BATCH} events; this one has ${events.length}`);
  }
  const parsed = new Array<LoggedEvent>(events.length);
  let ids: (string | undefined)[] | undefined;
  for (let i = 0; i < events.length; i++) {
    const event: unknown = events[i];
    if (!isPlainObject(event)) throw invalid(`events[${i}]`, `expected an object {user, type, data?, time?}, got ${describe(event)}`);
    for (const key in event) if (!EVENT_FIELDS.has(key)) throw invalid(`events[${i}].${key}`, 'unknown field (expected id, user, type, data, time)');
    const { id, user, type, data } = event;
    if (id !== undefined) {
      if (typeof id !== 'string' || id.length === 0 || id.length > MAX_EVENT_ID_LENGTH) {
        throw invalid(`events[${i}].id`, `expected a non-empty string of at most ${MAX_EVENT_ID_LENGTH} characters, got ${describe(id)}`);
      }
      (ids ??= new Array<string | undefined>(events.length))[i] = id;
    }
    if (typeof user !== 'number' || !Number.isInteger(user) || user < 0 || user > MAX_USER_ID) {
      throw invalid(`events[${i}].user`, `expected an integer user id from 0 to ${MAX_USER_ID}, got ${describe(user)}`);
    }
    if (typeof type !== 'string' || type.length === 0 || type.length > MAX_EVENT_TYPE_LENGTH) {
      throw invalid(`events[${i}].type`, `expected a non-empty string of at most ${MAX_EVENT_TYPE_LENGTH} characters, got ${describe(type)}`);
    }
    if (data !== undefined && !isPlainObject(data)) throw invalid(`events[${i}].data`, `expected an object, got ${describe(data)}`);
    parsed[i] = { user, type, data: (data as Record<string, unknown> | undefined) ?? {}, time: eventTime(event.time, `events[${i}].time`, now) };
  }
  return { ...(tenant === undefined ? {} : { tenant }), events: parsed, ...(ids === undefined ? {} : { ids }) };
}

/**
 * Appends already validated events (no key, no ids) of tenant `tenantId`: resolves to the accepted count once they
 * are durable. For in-process callers (tests, benchmarks); it reads the tenant's partitioning each call.
 */
export async function appendEvents(database: Database, ingestState: IngestState, tenantId: string, events: LoggedEvent[], now = Date.now()): Promise<number> {
  if (events.length === 0) return 0;
  const tenant = await database.db.tenant.findUniqueOrThrow({ where: { id: tenantId }, select: { id: true, partitions: true, userBlock: true } });
  return (await appendRequest(database, ingestState, tenant, { events }, now)).accepted;
}

/**
 * The tenant a batch goes to. A tenant's partitioning never changes, and a valid API key proves its tenant exists (keys
 * are deleted with their tenant), so key callers whose tenant this thread has seen skip the tenant lookup.
 */
async function ingestTarget(database: Database, ingestState: IngestState, principal: Principal, ref: string | undefined): Promise<IngestTenant> {
  if (principal.kind === 'tenant' && (ref === undefined || ref === principal.tenantId)) {
    const partitioning = ingestState.tenantPartitions.get(principal.tenantId);
    if (partitioning !== undefined) return { id: principal.tenantId, ...partitioning };
  }
  // The tenant of an event batch is a body field, so an unknown one (or one the key may not see) is bad input: 400.
  const tenant = await callerTenant(database, principal, ref).catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'not_found') throw invalid('tenant', `unknown tenant "${ref}"`);
    throw error;
  });
  ingestState.tenantPartitions.set(tenant.id, { partitions: tenant.partitions, userBlock: tenant.userBlock });
  return tenant;
}

/** The Idempotency-Key header, checked: absent is undefined; present, it must be 1–255 visible ASCII characters. */
export function idempotencyKey(header: string | null): string | undefined {
  if (header === null) return undefined;
  if (!IDEMPOTENCY_KEY.test(header)) throw invalid('Idempotency-Key', `expected 1 to 255 visible ASCII characters, got ${describe(header)}`);
  return header;
}

/**
 * Everything of an ingest call but the append: validates the batch, resolves the tenant, hashes the body for an
 * Idempotency-Key and encodes the events by partition. "Same body" (for a key) is the same bytes: `bodyBytes` as the
 * request sent them (hashing them costs no re-serialization); in-process callers, which have no request, give none
 * and their body's JSON is hashed.
 */
export async function prepareIngest(
  database: Database,
  ingestState: IngestState,
  principal: Principal,
  body: unknown,
  now: number,
  key?: string,
  bodyBytes?: Uint8Array,
): Promise<PreparedIngest> {
  const batch = parseEventBatch(body, now);
  const tenant = await ingestTarget(database, ingestState, principal, batch.tenant);
  const requestHash =
    key === undefined
      ? undefined
      : createHash('sha256')
          .update(bodyBytes ?? JSON.stringify(body))
          .digest('base64url');
  return { tenantId: tenant.id, request: encodeRequest({ events: batch.events, ids: batch.ids, key, requestHash }, tenant) };
}

/** `prepareIngest` of a request body as its bytes. */
export function prepareIngestBody(
  database: Database,
  ingestState: IngestState,
  principal: Principal,
  body: Uint8Array,
  now: number,
  key?: string,
): Promise<PreparedIngest> {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  return prepareIngest(database, ingestState, principal, parseJsonBody(text), now, key, body);
}

/**
 * Appends a prepared request durably. With an Idempotency-Key a request already committed under that key (same body)
 * is answered as it was then, appending nothing; events whose `id` is already in the log (within the dedupe window)
 * are counted as `duplicates` and not appended again.
 */
export async function appendPrepared(database: Database, ingestState: IngestState, prepared: PreparedIngest, now: number): Promise<IngestOutcome> {
  return { tenantId: prepared.tenantId, ...(await appendEncoded(database, ingestState, prepared.tenantId, prepared.request, now)) };
}

/** The whole ingest call in one thread (in-process callers and tests): `prepareIngest`, then `appendPrepared`. */
export async function ingest(
  database: Database,
  ingestState: IngestState,
  principal: Principal,
  body: unknown,
  now: number,
  key?: string,
  bodyBytes?: Uint8Array,
): Promise<IngestOutcome> {
  return appendPrepared(database, ingestState, await prepareIngest(database, ingestState, principal, body, now, key, bodyBytes), now);
}
