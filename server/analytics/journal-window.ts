// Reading an instance's journal for analytics (paths, funnels): the moves committed in a time window, one partition
// at a time (a user's moves are all in the partition `user % P`, so seq order within it is each user's own order), in
// pages, giving the thread a turn between pages. Single-user moves and bulk moves are read apart
// (server/storage/journal-moves.ts): single moves cross as text, up to 100,000 a page, in one string per edge (paths)
// or per page (funnels); bulk moves, which carry bitmaps, a few at a time.
import { AppError } from '../errors';
import { tenantLimits } from '../limits/limits';
import { retainedFrom } from '../engine/journal-retention';
import type { Database } from '../storage/database';
import { bulkMovesAfter, type JournalPartitionWindow, singleMovesByEdge, singleMovesInto } from '../storage/journal-moves';

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

const partitionWindow = (scope: JournalScope, partition: number): JournalPartitionWindow => ({
  tenantId: scope.tenantId,
  instanceId: scope.instanceId,
  partition,
  ...scope.window,
});

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
    const window = partitionWindow(scope, partition);
    for (let after = 0, page = true; page; ) {
      if (after > 0) await turn();
      let read = 0;
      for (const { fromStep, toStep, moves, lastSeq, users } of await singleMovesByEdge(database, window, after, SINGLE_PAGE)) {
        read += moves;
        after = Math.max(after, lastSeq);
        sink.edge({ fromStep, toStep, moves, users: integers(users, new Uint32Array(moves)) });
      }
      page = read === SINGLE_PAGE;
    }
    await eachBulk(database, window, Number.POSITIVE_INFINITY, undefined, async (bulk) => void sink.bulk(bulk));
  }
}

/**
 * Funnels: the moves into `toSteps` in each user's order, partition after partition: the single moves before each
 * bulk move (by seq), a page at a time, then the bulk move.
 */
export async function readMoves(database: Database, scope: JournalScope, sink: MoveSink, toSteps: string[]): Promise<void> {
  for (let partition = 0; partition < scope.partitions; partition++) {
    const window = partitionWindow(scope, partition);
    let after = 0;
    const singlesBefore = async (before: number) => {
      for (let page = true; page; ) {
        await turn();
        const { moves: count, lastSeq, codes } = await singleMovesInto(database, window, toSteps, after, before, SINGLE_PAGE);
        if (count > 0) {
          after = lastSeq;
          const moves = integers(codes, new Float64Array(count));
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
    await eachBulk(database, window, Number.POSITIVE_INFINITY, toSteps, async (bulk, seq) => {
      await singlesBefore(seq);
      sink.bulk(bulk);
    });
    await singlesBefore(Number.POSITIVE_INFINITY);
    sink.endPartition();
  }
}

/** The partition's bulk moves in the window in seq order, BULK_PAGE rows a read. */
async function eachBulk(
  database: Database,
  window: JournalPartitionWindow,
  before: number,
  toSteps: string[] | undefined,
  visit: (move: BulkMove, seq: number) => Promise<void>,
): Promise<void> {
  for (let after = 0, page = true; page; ) {
    const rows = await bulkMovesAfter(database, window, toSteps, after, BULK_PAGE);
    for (const { seq, ...move } of rows) {
      if (seq >= before) return;
      await visit(move, seq);
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
