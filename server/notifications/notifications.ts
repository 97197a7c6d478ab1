// Notifications: the engine's committed moves (the Journal table) read by integrations with a cursor, named
// consumers that remember their cursor, and the cleanup that keeps the journal bounded.
//
// A cursor is a journal `seq`: `after=<cursor>` returns the tenant's moves with a larger seq, oldest first, and
// `next` is the cursor to send next time. Seqs are global and assigned in commit order by the engine, so a reader
// that has seen seq N never misses a later-committed move with a smaller seq.
import { z } from 'zod';
import { deserializeBitmap, type RoaringBitmap32, serializeBitmap } from '../crowd/bitmap';
import { AppError, conflict, notFound } from '../errors';
import { DEFAULT_LIMITS } from '../limits/limits';
import type { Database } from '../storage/database';
import { lostAfter, type Lost } from '../engine/journal-retention';
import { NAME_KINDS, nameSchema } from '../../core/model/names';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 10_000;
/** A bulk move of at most this many users lists their IDs; a larger one carries its portable roaring bitmap. */
export const INLINE_USERS_MAX = 1_000;
/** …as long as the page has listed fewer than this many IDs in all; later bulk moves of the page carry bitmaps. */
export const INLINE_USERS_PER_PAGE = 100_000;
/**
 * A page stops taking journal entries once their bitmaps reach this many bytes (it always holds at least one), so a
 * page of bulk moves stays a few MB whatever `limit` asks for; `next` continues after the last entry it took.
 */
export const MAX_PAGE_BITMAP_BYTES = 4 * 1024 * 1024;
/** Journal entries read per query while a page fills (bitmaps can be large: never `limit` of them at once). */
const READ_CHUNK = 64;
/** The default of the journalRetentionHours limit, in ms. */
export const DEFAULT_RETENTION_MS = DEFAULT_LIMITS.journalRetentionHours * 3_600_000;

/** A cursor in a query string (text, so coerced) and in a JSON body (a number, never a string or a boolean). */
const Cursor = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const BodyCursor = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const NotificationsQuery = z.strictObject({
  after: Cursor.default(0),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(DEFAULT_PAGE),
  tenant: z.string().min(1).optional(),
});

export const ConsumerName = nameSchema(NAME_KINDS.consumer);

export const ConsumerParams = z.object({ name: ConsumerName });

export const CreateConsumerBody = z.strictObject({
  start: z.union([z.enum(['tail', 'head']), BodyCursor]).default('tail'),
});

export const CommitBody = z.strictObject({ cursor: BodyCursor });

export const TenantQuery = z.strictObject({ tenant: z.string().min(1).optional() });

export type Notification = {
  seq: number;
  instanceId: string;
  /** null when users enter the entry step at start. */
  from: string | null;
  to: string;
  /** A single-user move. */
  user?: number;
  /** A bulk move of at most INLINE_USERS_MAX users. */
  users?: number[];
  /** A larger bulk move: base64 of the portable roaring bitmap. */
  bitmap?: string;
  count: number;
  /** A bulk move merged from the entries of several partitions (in seq order; `seq` is the first of them). */
  seqs?: number[];
  leaveAction: string | null;
  enterAction: string | null;
  time: string;
};

/** `lost`: retention deleted moves this reader had not read (seq ≤ through); absent when nothing was lost. */
export type NotificationPage = { items: Notification[]; next: number; lost?: Lost };

type JournalRow = {
  seq: bigint;
  instanceId: string;
  partition: number;
  fromStep: string | null;
  toStep: string;
  user: bigint | null;
  bitmap: Uint8Array | null;
  count: bigint;
  leaveAction: string | null;
  enterAction: string | null;
  timeMs: bigint;
};

function notification(row: JournalRow): Notification {
  return {
    seq: Number(row.seq),
    instanceId: row.instanceId,
    from: row.fromStep,
    to: row.toStep,
    count: Number(row.count),
    leaveAction: row.leaveAction,
    enterAction: row.enterAction,
    time: new Date(Number(row.timeMs)).toISOString(),
    ...(row.user === null ? {} : { user: Number(row.user) }),
  };
}

/** A bulk move as the page shows it: its user IDs while the page's budget lasts, else its compacted bitmap. */
function withUsers(item: Notification, users: RoaringBitmap32, inlineBudget: { left: number }): Notification {
  if (users.size <= Math.min(INLINE_USERS_MAX, inlineBudget.left)) {
    inlineBudget.left -= users.size;
    return { ...item, users: Array.from(users.toUint32Array()) };
  }
  users.runOptimize();
  return { ...item, bitmap: serializeBitmap(users).toString('base64') };
}

/**
 * The page's items. One bulk move of a commit is journaled per partition (each partition's users apart); entries of
 * the same move, i.e. the same instance, steps, actions and time, from different partitions and with no entry of
 * another time between them, are merged into one item (the union of their users, `seqs` listing them). Entries cut
 * apart by a page boundary stay apart.
 */
function pageItems(rows: JournalRow[]): Notification[] {
  type Bulk = { users: RoaringBitmap32; partitions: Set<number>; seqs: number[] };
  const entries: { item: Notification; bulk?: Bulk }[] = [];
  const open = new Map<string, Bulk>();
  let time: bigint | undefined;
  for (const row of rows) {
    if (row.timeMs !== time) open.clear();
    time = row.timeMs;
    if (row.bitmap === null) {
      entries.push({ item: notification(row) });
      continue;
    }
    const key = JSON.stringify([row.instanceId, row.fromStep, row.toStep, row.leaveAction, row.enterAction]);
    const same = open.get(key);
    if (same && !same.partitions.has(row.partition)) {
      same.users.orInPlace(deserializeBitmap(row.bitmap));
      same.partitions.add(row.partition);
      same.seqs.push(Number(row.seq));
      continue;
    }
    const bulk: Bulk = { users: deserializeBitmap(row.bitmap), partitions: new Set([row.partition]), seqs: [Number(row.seq)] };
    open.set(key, bulk);
    entries.push({ item: notification(row), bulk });
  }
  const inlineBudget = { left: INLINE_USERS_PER_PAGE };
  return entries.map(({ item, bulk }) => {
    if (!bulk) return item;
    return withUsers({ ...item, count: bulk.users.size, ...(bulk.seqs.length > 1 ? { seqs: bulk.seqs } : {}) }, bulk.users, inlineBudget);
  });
}

/** One page of the tenant's moves after `after`, oldest first: at most `limit` journal entries and about MAX_PAGE_BITMAP_BYTES of bitmaps. */
export async function readNotifications(database: Database, tenantId: string, after: number, limit: number): Promise<NotificationPage> {
  const rows: JournalRow[] = [];
  let bitmapBytes = 0;
  while (rows.length < limit && bitmapBytes < MAX_PAGE_BITMAP_BYTES) {
    const from = rows.length ? rows[rows.length - 1].seq : BigInt(after);
    const take = Math.min(READ_CHUNK, limit - rows.length);
    const chunk = await database.db.journal.findMany({ where: { tenantId, seq: { gt: from } }, orderBy: { seq: 'asc' }, take });
    for (const row of chunk) {
      if (rows.length > 0 && bitmapBytes + (row.bitmap?.byteLength ?? 0) > MAX_PAGE_BITMAP_BYTES) {
        bitmapBytes = MAX_PAGE_BITMAP_BYTES;
        break;
      }
      rows.push(row);
      bitmapBytes += row.bitmap?.byteLength ?? 0;
    }
    if (chunk.length < take) break;
  }
  const items = pageItems(rows);
  const lost = await lostAfter(database, tenantId, after);
  return { items, next: rows.length ? Number(rows[rows.length - 1].seq) : after, ...(lost ? { lost } : {}) };
}

/** `lost`: retention deleted moves after the consumer's cursor before it committed them (seq ≤ through), else null. */
export type ConsumerView = { name: string; cursor: number; lag: number; updatedAt: string; lost: Lost | null };

async function newestSeq(database: Database, tenantId: string): Promise<number> {
  const newest = await database.db.journal.findFirst({ where: { tenantId }, orderBy: { seq: 'desc' }, select: { seq: true } });
  return newest ? Number(newest.seq) : 0;
}

async function consumerView(database: Database, tenantId: string, consumer: { name: string; cursor: bigint; updatedAt: Date }): Promise<ConsumerView> {
  const lag = await database.db.journal.count({ where: { tenantId, seq: { gt: consumer.cursor } } });
  const lost = await lostAfter(database, tenantId, Number(consumer.cursor));
  return { name: consumer.name, cursor: Number(consumer.cursor), lag, updatedAt: consumer.updatedAt.toISOString(), lost };
}

/**
 * Creates a named consumer at the tail (only moves committed from now on), the head (every retained move) or a
 * given cursor. A consumer that already exists is returned as it is (`created: false`): re-running a setup
 * script never rewinds or skips a consumer's position.
 */
export async function createConsumer(
  database: Database,
  tenantId: string,
  name: string,
  start: 'tail' | 'head' | number,
): Promise<{ consumer: ConsumerView; created: boolean }> {
  const existing = await database.db.consumer.findUnique({ where: { tenantId_name: { tenantId, name } } });
  if (existing) return { consumer: await consumerView(database, tenantId, existing), created: false };
  const newest = await newestSeq(database, tenantId);
  if (typeof start === 'number' && start > newest) {
    throw new AppError('bad_request', `start cursor ${start} is ahead of the newest notification (${newest}); use "tail" to start after it`, { start, newest });
  }
  const cursor = start === 'tail' ? newest : start === 'head' ? 0 : start;
  const created = await database.db.consumer.upsert({
    where: { tenantId_name: { tenantId, name } },
    create: { tenantId, name, cursor: BigInt(cursor) },
    update: {},
  });
  return { consumer: await consumerView(database, tenantId, created), created: true };
}

async function requireConsumer(database: Database, tenantId: string, name: string) {
  const consumer = await database.db.consumer.findUnique({ where: { tenantId_name: { tenantId, name } } });
  if (!consumer) throw notFound(`Consumer "${name}"`);
  return consumer;
}

export async function getConsumer(database: Database, tenantId: string, name: string): Promise<ConsumerView> {
  return consumerView(database, tenantId, await requireConsumer(database, tenantId, name));
}

export async function listConsumers(database: Database, tenantId: string): Promise<ConsumerView[]> {
  const consumers = await database.db.consumer.findMany({ where: { tenantId }, orderBy: { name: 'asc' } });
  return Promise.all(consumers.map((consumer) => consumerView(database, tenantId, consumer)));
}

export async function deleteConsumer(database: Database, tenantId: string, name: string): Promise<void> {
  await requireConsumer(database, tenantId, name);
  await database.db.consumer.deleteMany({ where: { tenantId, name } });
}

/**
 * Moves a consumer's cursor forward. Committing the same cursor again is a no-op; a lower one is refused with 409
 * (commits never go backwards), one beyond the newest move with 400 (it would skip moves not yet written).
 * The compare-and-set is one conditional UPDATE, so two committers cannot move a cursor backwards between them.
 */
export async function commitConsumer(database: Database, tenantId: string, name: string, cursor: number, now: number): Promise<ConsumerView> {
  const current = await requireConsumer(database, tenantId, name);
  const newest = await newestSeq(database, tenantId);
  if (cursor > newest && cursor > Number(current.cursor)) {
    throw new AppError('bad_request', `cursor ${cursor} is ahead of the newest notification (${newest}); commit a cursor you have read`, { cursor, newest });
  }
  const moved = await database.db.consumer.updateMany({
    where: { tenantId, name, cursor: { lte: BigInt(cursor) } },
    data: { cursor: BigInt(cursor), updatedAt: new Date(now) },
  });
  const after = await requireConsumer(database, tenantId, name);
  if (moved.count === 0) {
    throw conflict(`cursor ${cursor} is behind consumer "${name}"'s committed cursor ${after.cursor}; commits never go backwards`, {
      cursor,
      committed: Number(after.cursor),
    });
  }
  return consumerView(database, tenantId, after);
}
