// Reading an instance's journal for analytics (paths, funnels): the moves committed in a time window, one partition
// at a time and in seq order within it (a user's moves are all in the partition `user % P`, so that is each user's
// own order), in pages, giving the thread a turn between pages. Single-user moves and bulk moves are read apart and
// merged by seq: a page of 20,000 single moves is a few hundred KB, while bulk rows carry bitmaps (up to ~1 MB each
// for a 10M-user crowd), so they come a few at a time.
import { AppError } from '../errors';
import { tenantLimits } from '../limits/limits';
import { trimmedThrough } from '../notifications/journal-retention';
import type { Database } from '../storage/database';

const SINGLE_PAGE = 20_000;
const BULK_PAGE = 16;

/** A half-open time window [from, to) in epoch ms. */
export type TimeWindow = { from: number; to: number };

/** Single-user moves in seq order, as parallel arrays (no object per move: a day can hold millions). */
export type SingleMoves = { fromSteps: (string | null)[]; toSteps: string[]; users: Uint32Array };

export type BulkMove = { fromStep: string | null; toStep: string; bitmap: Uint8Array; count: number };

/** What a reader does with the moves of one partition, called in seq order: every single move before a bulk move with a larger seq. */
export interface MoveSink {
  singles(moves: SingleMoves): void;
  bulk(move: BulkMove): void;
  /** The partition's moves are over. */
  endPartition(): void;
}

/**
 * Hands the instance's moves with `timeMs` in the window to `sink`, partition after partition; `toSteps` (when
 * given) keeps only the moves into those steps, in the database's WHERE clause.
 */
export async function readMoves(
  database: Database,
  instanceId: string,
  partitions: number,
  window: TimeWindow,
  sink: MoveSink,
  toSteps?: string[],
): Promise<void> {
  for (let partition = 0; partition < partitions; partition++) {
    const scope = { instanceId, partition, window, toSteps };
    const singles = new Pager<[number, string | null, string, number]>((after) => readSingles(database, scope, after), SINGLE_PAGE);
    const bulks = new Pager<[number, string | null, string, Uint8Array, number]>((after) => readBulks(database, scope, after), BULK_PAGE);
    for (;;) {
      const bulk = await bulks.peek();
      const before = bulk ? bulk[0] : Number.POSITIVE_INFINITY;
      // Every single move before the next bulk move, a page at a time.
      for (;;) {
        const run = await singles.takeBefore(before);
        if (run.length === 0) break;
        sink.singles({ fromSteps: run.map((r) => r[1]), toSteps: run.map((r) => r[2]), users: Uint32Array.from(run, (r) => r[3]) });
      }
      if (!bulk) break;
      bulks.skip();
      sink.bulk({ fromStep: bulk[1], toStep: bulk[2], bitmap: bulk[3], count: bulk[4] });
    }
    sink.endPartition();
  }
}

type Scope = { instanceId: string; partition: number; window: TimeWindow; toSteps?: string[] };

function where(scope: Scope, after: number, bind: (value: unknown) => string, kind: 'single' | 'bulk'): string {
  // Placeholders are bound in text order (SQLite's `?` are positional).
  const head = `WHERE "instanceId" = ${bind(scope.instanceId)} AND "partition" = ${bind(scope.partition)} AND "seq" > ${bind(after)}`;
  const window = ` AND "timeMs" >= ${bind(scope.window.from)} AND "timeMs" < ${bind(scope.window.to)}`;
  const steps = scope.toSteps ? ` AND "toStep" IN (${scope.toSteps.map(bind).join(', ')})` : '';
  return `${head}${window}${steps} AND "user" IS ${kind === 'single' ? 'NOT NULL' : 'NULL'}`;
}

async function readSingles(database: Database, scope: Scope, after: number): Promise<[number, string | null, string, number][]> {
  const { params, bind } = database.dialect.parameters();
  const { numberColumn, table } = database.dialect;
  const rows: [number, string | null, string, number][] = [];
  await (await database.raw()).each(
    `SELECT ${numberColumn('seq')}, "fromStep", "toStep", ${numberColumn('user')} FROM ${table('Journal')} ${where(scope, after, bind, 'single')}
     ORDER BY ${table('Journal')}."seq" LIMIT ${SINGLE_PAGE}`,
    params,
    (row) => rows.push(row as [number, string | null, string, number]),
  );
  return rows;
}

async function readBulks(database: Database, scope: Scope, after: number): Promise<[number, string | null, string, Uint8Array, number][]> {
  const { params, bind } = database.dialect.parameters();
  const { numberColumn, table } = database.dialect;
  const rows: [number, string | null, string, Uint8Array, number][] = [];
  await (await database.raw()).each(
    `SELECT ${numberColumn('seq')}, "fromStep", "toStep", "bitmap", ${numberColumn('count')} FROM ${table('Journal')} ${where(scope, after, bind, 'bulk')}
     ORDER BY ${table('Journal')}."seq" LIMIT ${BULK_PAGE}`,
    params,
    (row) => rows.push(row as [number, string | null, string, Uint8Array, number]),
  );
  return rows;
}

/** Keyset pages of rows whose first column is the seq, read on demand; the thread gets a turn before each read but the first. */
class Pager<Row extends [number, ...unknown[]]> {
  private rows: Row[] = [];
  private at = 0;
  private after = 0;
  private done = false;
  private reads = 0;

  constructor(
    private readonly read: (after: number) => Promise<Row[]>,
    private readonly pageSize: number,
  ) {}

  private async fill(): Promise<void> {
    if (this.at < this.rows.length || this.done) return;
    if (this.reads++ > 0) await new Promise((resolve) => setImmediate(resolve));
    this.rows = await this.read(this.after);
    this.at = 0;
    if (this.rows.length < this.pageSize) this.done = true;
    if (this.rows.length > 0) this.after = this.rows[this.rows.length - 1][0];
  }

  async peek(): Promise<Row | undefined> {
    await this.fill();
    return this.rows[this.at];
  }

  skip(): void {
    this.at++;
  }

  /** The rows left in the current page (read when empty) with a seq below `before`. */
  async takeBefore(before: number): Promise<Row[]> {
    await this.fill();
    let end = this.at;
    while (end < this.rows.length && this.rows[end][0] < before) end++;
    const run = this.rows.slice(this.at, end);
    this.at = end;
    return run;
  }
}

/**
 * Where the tenant's journal still holds every move: from the time of the first move after the retention watermark
 * (JournalTrim), or, when retention deleted every move it had, from the retention's age cutoff; null when retention
 * never deleted any (the whole history is there).
 */
export async function retainedFrom(database: Database, tenantId: string, now: number): Promise<number | null> {
  const through = await trimmedThrough(database, tenantId);
  if (through === 0) return null;
  const { params, bind } = database.dialect.parameters();
  const journal = database.dialect.table('Journal');
  const [first] = await (await database.raw()).query<{ timeMs: unknown }>(
    `SELECT ${database.dialect.numberColumn('timeMs')} FROM ${journal} WHERE "tenantId" = ${bind(tenantId)} AND "seq" > ${bind(through)} ORDER BY ${journal}."seq" LIMIT 1`,
    params,
  );
  if (first) return Number(first.timeMs);
  return now - (await tenantLimits(database, tenantId)).journalRetentionHours * 3_600_000;
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
