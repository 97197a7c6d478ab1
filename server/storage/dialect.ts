// The one place that knows which SQL database this process runs on. Everything outside server/storage/ that writes
// raw SQL asks the Dialect for the piece that differs (placeholders, schema-qualified names, locks, JSON rows, casts)
// instead of asking which database it is.
import type { DatabaseTarget } from './database-url';
import type { Tx } from './db';
import type { RawStatement } from './raw';

/** Positional parameters of one statement: `bind` returns the placeholder of a value and records it in `params`. */
export interface Parameters {
  params: unknown[];
  bind: (value: unknown) => string;
}

/** The rows of a JSON array bound as one parameter, for `INSERT … SELECT … FROM ${from} ORDER BY ${ordinal}`. */
export interface JsonArrayRows {
  from: string;
  /** 1-based position of the element in the array. */
  ordinal: string;
  /** Element `index` of a row that is itself an array, as text, or cast to an integer column's type. */
  field(index: number, type?: 'int' | 'bigint'): string;
}

export interface Dialect {
  /** A table name for raw SQL: PostgreSQL raw queries do not get the client's schema, so it is spelled out there. */
  table(name: string): string;
  /** Placeholders for one statement: `$n` on PostgreSQL, `?` on SQLite (bound in text order). */
  parameters(): Parameters;
  /**
   * Appended to a SELECT whose rows' keys and owners must stay unchanged until the transaction commits (a commit's
   * lease fence). PostgreSQL key-share-locks them: that waits for, and holds off, only `lockedForTakeover` (a lease
   * taken or handed back), never a plain UPDATE such as a lease renewal or an offset. SQLite's write transaction
   * already excludes every other writer, so there it is empty.
   */
  readonly lockFoundRows: string;
  /** `select` with its rows locked for update (against `lockFoundRows` holders); unchanged on SQLite. */
  lockedForTakeover(select: string): string;
  /**
   * A statement that serializes, until commit, every transaction that runs it with the same key and a scope in common
   * (a tenant); null where the write transaction already does (SQLite: one writer at a time).
   */
  serializeWriters(key: number, scopes: readonly string[]): RawStatement | null;
  /** The next value of the sequence `name`, in SQL; null where there are no sequences (SQLite). */
  nextInSequence(name: string): string | null;
  /**
   * Within an interactive transaction: waits until no other transaction holding `key` is open, and holds it to the
   * commit. SQLite takes its (single) write lock now, so the reads that follow see every committed write.
   */
  lockUntilCommit(tx: Tx, key: string): Promise<void>;
  /**
   * Within an interactive transaction: locks the row of `table` with this `id` against every writer (including
   * inserts of rows that reference it) until the commit; false when there is no such row.
   */
  lockRowForUpdate(tx: Tx, table: string, id: string): Promise<boolean>;
  /**
   * `select` with the rows it finds locked for update, skipping rows other transactions hold; null where rows have no
   * locks of their own (SQLite: `lockUntilCommit` already excluded every other writer).
   */
  skippingLockedRows(select: string): string | null;
  /** A select-list entry that reads an integer column as a JS number (PostgreSQL hands BIGINT over as a string). */
  numberColumn(column: string): string;
  /**
   * A bound value typed for a column where the statement alone does not say (an `INSERT … SELECT` list, a `VALUES`
   * in a FROM): PostgreSQL reads an untyped parameter there as text. Timestamps are bound as `timestamp(ms)`.
   */
  typed(bound: string, type: 'int' | 'bigint' | 'bytea' | 'text' | 'timestamp'): string;
  /** A DateTime column value for raw SQL, in the form Prisma writes and reads back. */
  timestamp(ms: number): string;
  /** The rows of a JSON array bound as one parameter (`bound` is its placeholder). */
  jsonArrayRows(bound: string): JsonArrayRows;
  /**
   * True where every statement is a network round trip (PostgreSQL), so several rows go in one statement; false where
   * statements are in-process calls (SQLite), so a transaction of simple statements costs nothing more. A multi-row
   * statement sees only rows committed before it on PostgreSQL, which is what the one-statement writers rely on.
   */
  readonly roundTripPerStatement: boolean;
  /**
   * A column for a WHERE term that must not choose the index the query uses: SQLite's planner (no statistics) takes an
   * index on an equality term over a range on the primary key, so `+column` there; PostgreSQL plans by statistics.
   */
  withoutIndex(column: string): string;
  /**
   * Whether recovery reads an instance's journal rows in ONE pass in seq order (all partitions interleaved) rather than
   * one index read per partition. SQLite: one pass (its rows of 8 partitions share every page, so a read per
   * partition visited each page 8 times: 2.3 -> 1.1 s CPU for 1M rows). PostgreSQL: a read per partition, which
   * follows the (instanceId, partition, seq) index whatever the statistics say; its plan for the one pass depends
   * on statistics, which a burst of journal rows leaves stale, and then sorted every remaining row for each page
   * (3 s per 50,000-row page of 1M rows; 69 ms per page by the index).
   */
  readonly journalPassInSeqOrder: boolean;
  /**
   * A statement answering one row whose column `rows` is the JSON array of `select`'s rows (each an array of `columns`,
   * ordered by the column `orderBy`), or null where reading the rows one by one is faster. SQLite: 1M journal rows in 1.6 s
   * packed against 2.9 s as better-sqlite3 rows.
   */
  packedRows(select: string, columns: string[], orderBy: string): string | null;
  /**
   * A statement that brings the planner's statistics of `table` up to date before a long keyset read of it, or null
   * where plans do not depend on them (SQLite). After a bulk write, PostgreSQL's statistics lag until autovacuum gets to
   * the table: a 10M-row profile table still counted as a few thousand rows, so each 20,000-row page of a rebuild was
   * planned as a bitmap scan plus a sort of every remaining row (4 s per page, 500 pages) instead of an index walk
   * (11 ms). ANALYZE samples a fixed number of rows: 0.4 s on that table.
   */
  refreshPlannerStatistics(table: string): string | null;
  /**
   * An aggregate writing the integer expression `value` of each row of a group as decimal text separated by commas, in
   * `orderBy`'s order when given: a group of a hundred thousand journal rows crosses as one string, not as many rows.
   */
  integerList(value: string, orderBy?: string): string;
}

function sqliteDialect(): Dialect {
  return {
    table: (name) => `"${name}"`,
    parameters: () => {
      const params: unknown[] = [];
      return { params, bind: (value) => (params.push(value), '?') };
    },
    lockFoundRows: '',
    lockedForTakeover: (select) => select,
    serializeWriters: () => null,
    nextInSequence: () => null,
    lockUntilCommit: async (tx) => {
      // A write that changes nothing still starts the write transaction (WAL readers would keep an older snapshot).
      await tx.$executeRawUnsafe('UPDATE "Tenant" SET "id" = "id" WHERE 1 = 0');
    },
    lockRowForUpdate: async (tx, table, id) => (await tx.$executeRawUnsafe(`UPDATE "${table}" SET "id" = "id" WHERE "id" = ?`, id)) > 0,
    skippingLockedRows: () => null,
    numberColumn: (column) => `"${column}"`,
    typed: (bound) => bound,
    timestamp: (ms) => new Date(ms).toISOString().replace('Z', '+00:00'),
    jsonArrayRows: (bound) => ({
      from: `json_each(${bound}) AS j`,
      ordinal: `j."key" + 1`,
      field: (index) => `json_extract(j.value, '$[${index}]')`,
    }),
    roundTripPerStatement: false,
    withoutIndex: (column) => `+${column}`,
    journalPassInSeqOrder: true,
    packedRows: (select, columns, orderBy) => {
      const row = `json_array(${columns.map((c) => `r."${c}"`).join(', ')})`;
      return `SELECT json_group_array(${row} ORDER BY r."${orderBy}") AS "rows" FROM (${select}) r`;
    },
    refreshPlannerStatistics: () => null,
    integerList: (value, orderBy) => `group_concat(${value}, ','${orderBy ? ` ORDER BY ${orderBy}` : ''})`,
  };
}

function postgresDialect(schema: string): Dialect {
  const quotedSchema = `"${schema.replace(/"/g, '""')}"`;
  return {
    table: (name) => `${quotedSchema}."${name}"`,
    parameters: () => {
      const params: unknown[] = [];
      return { params, bind: (value) => (params.push(value), `$${params.length}`) };
    },
    lockFoundRows: ' FOR KEY SHARE',
    lockedForTakeover: (select) => `${select} FOR UPDATE`,
    // Scoped to the schema like lockUntilCommit: other schemas' writers (test runs, bench runs) never wait for it.
    // One lock per scope, taken in the order of their hashes (the lock keys), so two transactions sharing scopes never
    // wait for each other crosswise; a volatile function in the select list runs after the ORDER BY. The scopes travel
    // as JSON text, which Prisma's raw calls (a commit with `also`) pass like the raw driver.
    serializeWriters: (key, scopes) => ({
      sql: 'SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT hashtext($1 || s) AS k FROM json_array_elements_text($2::json) AS s) AS keys ORDER BY k',
      params: [`${schema}:${Math.trunc(key)}:`, JSON.stringify(scopes)],
    }),
    nextInSequence: (name) => `nextval('${quotedSchema.replace(/'/g, "''")}."${name}"')`,
    lockUntilCommit: async (tx, key) => {
      // Advisory locks are database-wide: the schema keeps processes on other schemas (test runs) out of the way.
      await tx.$queryRawUnsafe('SELECT 1 AS "locked" FROM (SELECT pg_advisory_xact_lock(hashtext($1))) AS "lock"', `${schema}:${key}`);
    },
    lockRowForUpdate: async (tx, table, id) =>
      (await tx.$queryRawUnsafe<unknown[]>(`SELECT 1 AS "found" FROM ${quotedSchema}."${table}" WHERE "id" = $1 FOR UPDATE`, id)).length > 0,
    skippingLockedRows: (select) => `${select} FOR UPDATE SKIP LOCKED`,
    numberColumn: (column) => `"${column}"::float8 AS "${column}"`,
    typed: (bound, type) => `${bound}::${type === 'timestamp' ? 'timestamp(3)' : type}`,
    // A zone in a literal for a timestamp-without-zone column is ignored: these are the UTC digits Prisma stores.
    timestamp: (ms) => new Date(ms).toISOString(),
    jsonArrayRows: (bound) => ({
      from: `json_array_elements(${bound}::json) WITH ORDINALITY AS j(v, ord)`,
      ordinal: 'j.ord',
      field: (index, type) => (type ? `(j.v->>${index})::${type}` : `j.v->>${index}`),
    }),
    roundTripPerStatement: true,
    withoutIndex: (column) => column,
    journalPassInSeqOrder: false,
    // Each row's JSON written by concatenation: json_agg built 1M rows in 3.7-4.1 s against node-pg's 2.6 s row by row,
    // while this text halves the engine thread's CPU for a page (300,000 rows: 150 against 320-430 ms).
    packedRows: (select, columns, orderBy) => {
      const row = columns.map((c) => `COALESCE(to_json(r."${c}")::text, 'null')`).join(` || ',' || `);
      return `SELECT '[' || COALESCE(string_agg('[' || ${row} || ']', ',' ORDER BY r."${orderBy}"), '') || ']' AS "rows" FROM (${select}) r`;
    },
    refreshPlannerStatistics: (table) => `ANALYZE ${quotedSchema}."${table}"`,
    integerList: (value, orderBy) => `string_agg((${value})::text, ','${orderBy ? ` ORDER BY ${orderBy}` : ''})`,
  };
}

export function dialectOf(target: DatabaseTarget): Dialect {
  return target.provider === 'postgres' ? postgresDialect(target.schema) : sqliteDialect();
}
