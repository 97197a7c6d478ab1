// The engine's hot statements (event log appends and reads, partition commits, leases, recovery reads) skip the ORM:
// through Prisma every statement is prepared anew and every Bytes/large-string parameter is copied and encoded for
// its de-duplication key, which profiles showed costs more than the bitmap work itself (BENCHMARKS.md). Everything
// else stays on the one Prisma client.
//
// SQLite: the SAME better-sqlite3 connection Prisma uses (one writer, one file lock), with prepared statements cached
// by SQL text. Its calls are synchronous, so a transaction here runs start to end without yielding once BEGIN IMMEDIATE
// has the write lock; it waits while one of Prisma's interactive transactions is open on the connection (Prisma awaits
// between statements), and for a lock another connection holds on a timer (sqlite-busy.ts), never in the thread.
// PostgreSQL: the thread's pg pool, the one Prisma uses too (server/storage/db.ts), schema-qualified SQL (`tableName`).
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import { connectedSqlite, type Storage } from './db';
import { whenUnlocked } from './sqlite-busy';
import { copyFromStdin } from './pg-copy';

export interface RawStatement {
  sql: string;
  params: unknown[];
  /** The statement has a RETURNING clause: its rows are part of the transaction's result. */
  returning?: boolean;
  /** PostgreSQL only: the statement is a `COPY … FROM STDIN` and these are its rows (text format). */
  copyFrom?: Buffer;
}

export interface RawDb {
  query<Row = Record<string, unknown>>(sql: string, params: unknown[]): Promise<Row[]>;
  /**
   * Hands each row, as an array of its columns in select order, to `visit` and returns how many there were. For reads
   * of a million rows (recovery): on SQLite no row object and no array of all rows is built (half the CPU of `query`).
   */
  each(sql: string, params: unknown[], visit: (row: unknown[]) => void): Promise<number>;
  /** Returns the number of rows changed. */
  execute(sql: string, params: unknown[]): Promise<number>;
  /**
   * Runs the statements in order in one transaction: all commit, or none and the first error is thrown. Returns the
   * rows of each statement marked `returning` (an empty list for the others).
   */
  transaction(statements: RawStatement[]): Promise<Record<string, unknown>[][]>;
  close(): Promise<void>;
}

/** How long a raw call may wait for one of Prisma's interactive SQLite transactions to end before it gives up. */
const PRISMA_TRANSACTION_WAIT_MS = 600_000;
const MAX_CACHED_STATEMENTS = 256;

class SqliteRaw implements RawDb {
  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  constructor(private readonly connection: BetterSqlite3.Database) {}

  private prepared(sql: string, asArrays = false): BetterSqlite3.Statement {
    const key = asArrays ? `arrays:${sql}` : sql;
    let statement = this.statements.get(key);
    if (!statement) {
      if (this.statements.size >= MAX_CACHED_STATEMENTS) this.statements.clear();
      // Prisma turns safe integers on for the whole connection; our columns all fit a double.
      statement = this.connection.prepare(sql).safeIntegers(false);
      if (asArrays) statement.raw(true);
      this.statements.set(key, statement);
    }
    return statement;
  }

  /**
   * Runs `work` (synchronous) at a moment no Prisma transaction is open on the shared connection (ours never stay
   * open across a yield): checked in the same turn as `work` runs, so nothing can begin in between.
   */
  private async whenIdle<T>(work: () => T): Promise<T> {
    const deadline = Date.now() + PRISMA_TRANSACTION_WAIT_MS;
    while (this.connection.inTransaction) {
      if (Date.now() > deadline) throw new Error('A database transaction has stayed open for 10 minutes');
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    return work();
  }

  async query<Row>(sql: string, params: unknown[]): Promise<Row[]> {
    return whenUnlocked(() => this.whenIdle(() => this.prepared(sql).all(...params.map(sqliteValue)) as Row[]));
  }

  async each(sql: string, params: unknown[], visit: (row: unknown[]) => void): Promise<number> {
    // Only the first step can be refused for a lock (a read keeps its snapshot once it has one): no row is visited twice.
    return whenUnlocked(() =>
      this.whenIdle(() => {
        let count = 0;
        for (const row of this.prepared(sql, true).iterate(...params.map(sqliteValue))) {
          visit(row as unknown[]);
          count++;
        }
        return count;
      }),
    );
  }

  async execute(sql: string, params: unknown[]): Promise<number> {
    return whenUnlocked(() => this.whenIdle(() => this.prepared(sql).run(...params.map(sqliteValue)).changes));
  }

  async transaction(statements: RawStatement[]): Promise<Record<string, unknown>[][]> {
    return whenUnlocked(() => this.whenIdle(() => this.transactionNow(statements)));
  }

  /**
   * BEGIN IMMEDIATE to COMMIT without yielding. The write lock is taken up front, so only BEGIN can be refused for a
   * lock (SQLITE_BUSY, nothing started: the caller tries again later) and no statement after it waits for one.
   */
  private transactionNow(statements: RawStatement[]): Record<string, unknown>[][] {
    this.prepared('BEGIN IMMEDIATE').run();
    try {
      const results = statements.map((s) => {
        const prepared = this.prepared(s.sql);
        const values = s.params.map(sqliteValue);
        if (s.returning) return prepared.all(...values) as Record<string, unknown>[];
        prepared.run(...values);
        return [];
      });
      this.prepared('COMMIT').run();
      return results;
    } catch (error) {
      if (this.connection.inTransaction) this.prepared('ROLLBACK').run();
      throw error;
    }
  }

  async close(): Promise<void> {
    this.statements.clear(); // the connection is Prisma's to close
  }
}

/** better-sqlite3 binds Buffers, not other Uint8Array views. */
function sqliteValue(value: unknown): unknown {
  return value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value;
}

class PostgresRaw implements RawDb {
  constructor(private readonly pool: pg.Pool) {}

  async query<Row>(sql: string, params: unknown[]): Promise<Row[]> {
    return (await this.pool.query(sql, params)).rows as Row[];
  }

  async each(sql: string, params: unknown[], visit: (row: unknown[]) => void): Promise<number> {
    const { rows } = await this.pool.query<unknown[]>({ text: sql, values: params, rowMode: 'array' });
    for (const row of rows) visit(row);
    return rows.length;
  }

  async execute(sql: string, params: unknown[]): Promise<number> {
    return (await this.pool.query(sql, params)).rowCount ?? 0;
  }

  async transaction(statements: RawStatement[]): Promise<Record<string, unknown>[][]> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const results: Record<string, unknown>[][] = [];
      for (const s of statements) {
        if (s.copyFrom) {
          await copyFromStdin(client, s.sql, s.copyFrom);
          results.push([]);
          continue;
        }
        const { rows } = await client.query(s.sql, s.params);
        results.push(s.returning ? rows : []);
      }
      await client.query('COMMIT');
      return results;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    // The pool is the storage's, ended with it (closeDb).
  }
}

/** The raw connection of `held`, opened on first use. */
export function rawOf(held: Storage): Promise<RawDb> {
  held.raw ??=
    held.target.provider === 'sqlite' ? connectedSqlite(held).then((connection) => new SqliteRaw(connection)) : Promise.resolve(new PostgresRaw(held.pgPool!));
  return held.raw;
}
