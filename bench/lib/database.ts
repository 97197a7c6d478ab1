// Scratch databases for the benchmarks: a SQLite file under bench/tmp, or a schema in PostgreSQL's `test`
// database that is dropped afterwards. Never data/crowdflow.db.
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { applyMigrations } from '../../server/storage/migrate';
import { parseDatabaseUrl } from '../../server/storage/database-url';

export type Provider = 'sqlite' | 'postgres';

export const PG_BASE_URL = process.env.CROWDFLOW_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const TMP_DIR = join(process.cwd(), 'bench/tmp');

export interface ScratchDatabase {
  provider: Provider;
  url: string;
  /** Raw SQL on the scratch database (no Prisma), for setup and for peeking at engine tables. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Inserts rows in multi-row statements, all in one transaction. */
  insertRows(table: string, columns: string[], rows: unknown[][]): Promise<void>;
  drop(): Promise<void>;
}

/** `?` placeholders become `$1, $2…` on PostgreSQL. */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

const ROWS_PER_STATEMENT = 500;

function* multiRowInserts(table: string, columns: string[], rows: unknown[][]): Generator<[string, unknown[]]> {
  const head = `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES `;
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let offset = 0; offset < rows.length; offset += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(offset, offset + ROWS_PER_STATEMENT);
    yield [head + chunk.map(() => tuple).join(', '), chunk.flat()];
  }
}

export async function createScratchDatabase(provider: Provider, label: string): Promise<ScratchDatabase> {
  const id = `${label}_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
  if (provider === 'sqlite') {
    mkdirSync(join(TMP_DIR, 'db'), { recursive: true });
    const file = join(TMP_DIR, 'db', `${id}.db`);
    const url = `file:${file}`;
    await applyMigrations(parseDatabaseUrl(url));
    const sqlite = new Database(file, { timeout: 30_000 });
    sqlite.pragma('journal_mode = WAL');
    sqlite.defaultSafeIntegers(false);
    return {
      provider,
      url,
      async query<T>(sql: string, params: unknown[] = []) {
        const statement = sqlite.prepare(sql);
        return (statement.reader ? statement.all(...params) : (statement.run(...params), [])) as T[];
      },
      async insertRows(table, columns, rows) {
        sqlite.transaction(() => {
          for (const [sql, params] of multiRowInserts(table, columns, rows)) sqlite.prepare(sql).run(...params);
        })();
      },
      async drop() {
        sqlite.close();
        for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
      },
    };
  }
  const schema = `bench_${id}`.toLowerCase();
  const url = `${PG_BASE_URL}?schema=${schema}`;
  await applyMigrations(parseDatabaseUrl(url));
  const pool = new pg.Pool({ connectionString: PG_BASE_URL, max: 2, options: `-c search_path=${schema}` });
  return {
    provider,
    url,
    async query<T>(sql: string, params: unknown[] = []) {
      return (await pool.query(numbered(sql), params)).rows as T[];
    },
    async insertRows(table, columns, rows) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        for (const [sql, params] of multiRowInserts(table, columns, rows)) await client.query(numbered(sql), params);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    },
    async drop() {
      await pool.end();
      const client = new pg.Client({ connectionString: PG_BASE_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    },
  };
}
