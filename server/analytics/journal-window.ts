// Reading an instance's journal for analytics (paths, funnels): the moves committed in a time window, one partition
// at a time (a user's moves are all in the partition `user % P`, so seq order within it is each user's own order), in
// pages, giving the thread a turn between pages. Single-user moves and bulk moves are read apart. Single moves cross
// from the database as text, a page of up to 100,000 of them in one string per edge (paths) or per page (funnels):
// read as rows, each of a day's 470,000 single moves cost a JS array and two step names, which was most of the time.
// Bulk rows carry bitmaps (up to ~1 MB each for a 10M-user crowd), so they come a few at a time, found through the
// partial index of bulk moves (Journal_bulk_tenantId_partition_seq_idx) rather than by walking every single move.
import { AppError } from '../errors';
import { tenantLimits } from '../limits/limits';
import { retainedFrom } from '../notifications/journal-retention';
import type { Database } from '../storage/database';

const SINGLE_PAGE = 100_000;
const BULK_PAGE = 16;

/** A half-open time window [from, to) in epoch ms. */
export type TimeWindow = { from: number; to: number };

/** Journal rows of one instance in a window, one partition at a time. */
export type JournalScope = { tenantId: string; instanceId: string; partitions: number; window: TimeWindow };

export type BulkMove = { fromStep: string | null; toStep: string; bitmap: Uint8Array; count: number };

/** The single moves of one edge in a page: how many, and their users (a user moving twice is there twice). */
export type EdgeMoves = { fromStep: string | null; toStep: string; moves: number; users: Uint32Array };

/** Single moves in seq order: users[k] moved into toSteps[steps[k]] (the funnel's steps as given to readMoves). */
export type SingleMoves = { steps: Uint32Array; users: Uint32Array };

/** What a funnel does with the moves of one partition, called in seq order: every single move before a bulk move with a larger seq. */
export interface MoveSink {
  singles(moves: SingleMoves): void;
  bulk(move: BulkMove): void;
  /** The partition's moves are over. */
  endPartition(): void;
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Paths: every move of the window, single moves grouped by edge a page at a time and bulk moves one by one, in no
 * particular order (an edge's counts do not depend on it).
 */
export async function readEdgeMoves(
  database: Database,
  scope: JournalScope,
  sink: { edge(moves: EdgeMoves): void; bulk(move: BulkMove): void },
): Promise<void> {
  for (let partition = 0; partition < scope.partitions; partition++) {
    for (let after = 0, page = true; page; ) {
      if (after > 0) await turn();
      const { params, bind } = database.dialect.parameters();
      const journal = database.dialect.table('Journal');
      const rows: [string | null, string, unknown, unknown, string | null][] = [];
      const inner = `SELECT "seq", "fromStep", "toStep", "user" FROM ${journal} ${singlesWhere(database, scope, partition, after, Number.POSITIVE_INFINITY, bind)} ORDER BY "seq" LIMIT ${SINGLE_PAGE}`;
      await (await database.raw()).each(
        `SELECT r."fromStep", r."toStep", COUNT(*), MAX(r."seq"), ${database.dialect.integerList('r."user"')} FROM (${inner}) r GROUP BY r."fromStep", r."toStep"`,
        params,
        (row) => rows.push(row as [string | null, string, unknown, unknown, string | null]),
      );
      let read = 0;
      for (const [fromStep, toStep, count, last, users] of rows) {
        read += Number(count);
        after = Math.max(after, Number(last));
        sink.edge({ fromStep, toStep, moves: Number(count), users: integers(users ?? '', new Uint32Array(Number(count))) });
      }
      page = read === SINGLE_PAGE;
    }
    await eachBulk(database, scope, partition, Number.POSITIVE_INFINITY, undefined, async (bulk) => void sink.bulk(bulk));
  }
}

/**
 * Funnels: the moves into `toSteps` in each user's order, partition after partition: the single moves before each
 * bulk move (by seq), a page at a time, then the bulk move.
 */
export async function readMoves(database: Database, scope: JournalScope, sink: MoveSink, toSteps: string[]): Promise<void> {
  for (let partition = 0; partition < scope.partitions; partition++) {
    let after = 0;
    const singlesBefore = async (before: number) => {
      for (let page = true; page; ) {
        await turn();
        const { params, bind } = database.dialect.parameters();
        const journal = database.dialect.table('Journal');
        // Each move as one integer, user × steps + the step's place in toSteps (< 2^53 for any user ID).
        const code = `CASE "toStep" ${toSteps.map((step, k) => `WHEN ${bind(step)} THEN ${k}`).join(' ')} END`;
        const inner = `SELECT "seq", "user" * ${toSteps.length} + ${code} AS "move" FROM ${journal} ${singlesWhere(database, scope, partition, after, before, bind, toSteps)} ORDER BY "seq" LIMIT ${SINGLE_PAGE}`;
        let row: unknown[] = [0, null, null];
        await (await database.raw()).each(
          `SELECT COUNT(*), MAX(r."seq"), ${database.dialect.integerList('r."move"', 'r."seq"')} FROM (${inner}) r`,
          params,
          (found) => {
            row = found;
          },
        );
        const count = Number(row[0]);
        if (count > 0) {
          after = Number(row[1]);
          const moves = integers(String(row[2]), new Float64Array(count));
          const steps = new Uint32Array(count);
          const users = new Uint32Array(count);
          for (let k = 0; k < count; k++) {
            const user = Math.floor(moves[k] / toSteps.length);
            users[k] = user;
            steps[k] = moves[k] - user * toSteps.length;
          }
          sink.singles({ steps, users });
        }
        page = count === SINGLE_PAGE;
      }
    };
    await eachBulk(database, scope, partition, Number.POSITIVE_INFINITY, toSteps, async (bulk, seq) => {
      await singlesBefore(seq);
      sink.bulk(bulk);
    });
    await singlesBefore(Number.POSITIVE_INFINITY);
    sink.endPartition();
  }
}

/** The single moves of a partition with after < seq < before, in the window (into `toSteps` when given). */
function singlesWhere(
  database: Database,
  scope: JournalScope,
  partition: number,
  after: number,
  before: number,
  bind: (value: unknown) => string,
  toSteps?: string[],
): string {
  // Placeholders are bound in text order (SQLite's `?` are positional): each term is written as it is bound. The tenant
  // is named (docs/SCALING.md) but not as the index to read by: the instance's index (instanceId, partition, seq) is.
  let where = `WHERE ${database.dialect.withoutIndex('"tenantId"')} = ${bind(scope.tenantId)} AND "instanceId" = ${bind(scope.instanceId)} AND "partition" = ${bind(partition)} AND "seq" > ${bind(after)}`;
  if (Number.isFinite(before)) where += ` AND "seq" < ${bind(before)}`;
  where += ` AND "timeMs" >= ${bind(scope.window.from)} AND "timeMs" < ${bind(scope.window.to)}`;
  if (toSteps) where += ` AND "toStep" IN (${toSteps.map(bind).join(', ')})`;
  return `${where} AND "user" IS NOT NULL`;
}

/** The partition's bulk moves in the window in seq order, BULK_PAGE rows a read, through the partial index of bulk moves. */
async function eachBulk(
  database: Database,
  scope: JournalScope,
  partition: number,
  before: number,
  toSteps: string[] | undefined,
  visit: (move: BulkMove, seq: number) => Promise<void>,
): Promise<void> {
  const { numberColumn, table, withoutIndex } = database.dialect;
  for (let after = 0, page = true; page; ) {
    // Placeholders are bound in text order (SQLite's `?` are positional).
    const { params, bind } = database.dialect.parameters();
    const where =
      `WHERE "tenantId" = ${bind(scope.tenantId)} AND "partition" = ${bind(partition)} AND "user" IS NULL AND "seq" > ${bind(after)}` +
      ` AND ${withoutIndex('"instanceId"')} = ${bind(scope.instanceId)} AND "timeMs" >= ${bind(scope.window.from)} AND "timeMs" < ${bind(scope.window.to)}` +
      (toSteps ? ` AND "toStep" IN (${toSteps.map(bind).join(', ')})` : '');
    const rows: [number, string | null, string, Uint8Array, number][] = [];
    await (await database.raw()).each(
      `SELECT ${numberColumn('seq')}, "fromStep", "toStep", "bitmap", ${numberColumn('count')} FROM ${table('Journal')} ${where}
       ORDER BY ${table('Journal')}."seq" LIMIT ${BULK_PAGE}`,
      params,
      (row) => rows.push(row as [number, string | null, string, Uint8Array, number]),
    );
    for (const [seq, fromStep, toStep, bitmap, count] of rows) {
      if (seq >= before) return;
      await visit({ fromStep, toStep, bitmap, count }, seq);
      after = seq;
    }
    page = rows.length === BULK_PAGE;
    if (page) await turn();
  }
}

/** Fills `out` with the non-negative integers (< 2^53) that `text` writes in decimal, separated by commas. */
export function integers<T extends Float64Array | Uint32Array>(text: string, out: T): T {
  const count = out.length;
  let k = 0;
  let value = 0;
  let digits = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 44) {
      out[k++] = value;
      value = 0;
      digits = false;
    } else {
      value = value * 10 + (c - 48);
      digits = true;
    }
  }
  if (digits) out[k++] = value;
  if (k !== count) throw new Error(`journal read: ${k} moves in a list of ${count}`);
  return out;
}

/**
 * The window a query asked for, checked: `from` before `to` (a 400 naming `from`), and within what the journal retains
 * (a 422 `outside_retention` naming the retained range). Without `from`, the window starts at `start` (the instance's
 * start) or where the journal's retained range begins, whichever is later; without `to`, it ends now (included).
 */
export async function checkedWindow(
  database: Database,
  tenantId: string,
  asked: { from?: string; to?: string },
  start: number,
  now: number,
): Promise<TimeWindow & { retainedFrom: number | null }> {
  const retained = await retainedFrom(database, tenantId, now);
  // By default the window ends just after now: a move made this millisecond is in it.
  const to = asked.to === undefined ? now + 1 : Date.parse(asked.to);
  const from = asked.from === undefined ? Math.min(Math.max(start, retained ?? start), to - 1) : Date.parse(asked.from);
  if (from >= to) throw new AppError('bad_request', `from (${iso(from)}) must be before to (${iso(to)})`, { path: 'from' });
  if (retained !== null && from < retained) {
    const hours = (await tenantLimits(database, tenantId)).journalRetentionHours;
    throw new AppError(
      'outside_retention',
      `from (${iso(from)}) is before the journal's retained range: it holds the moves from ${iso(retained)} to now (${iso(now)}); ` +
        `older moves were deleted by retention (journalRetentionHours ${hours})`,
      { path: 'from', retainedFrom: iso(retained), retainedTo: iso(now) },
    );
  }
  return { from, to, retainedFrom: retained };
}

export const iso = (ms: number) => new Date(ms).toISOString();
