import Database from 'better-sqlite3';
import pg from 'pg';
import { inject } from 'vitest';
import { parseDatabaseUrl } from '../../server/storage/database-url';

/**
 * Runs SQL on the database of the real test server (API tests check what a request wrote, or did not write).
 * Write the SQL with `$1, $2…` placeholders and unqualified quoted table names; it runs in one transaction.
 * `databaseUrl` names another server's database (a test that runs servers of its own).
 */
export async function serverSql<T = Record<string, unknown>>(sql: string, params: unknown[] = [], options: { databaseUrl?: string } = {}): Promise<T[]> {
  const target = parseDatabaseUrl(options.databaseUrl ?? inject('serverDatabaseUrl'));
  if (target.provider === 'sqlite') {
    const database = new Database(target.file, { timeout: 30_000 });
    try {
      const values: unknown[] = [];
      const statement = database.prepare(sql.replace(/\$(\d+)/g, (_, n: string) => (values.push(params[Number(n) - 1]), '?')));
      return database.transaction(() => (statement.reader ? (statement.all(...values) as T[]) : (statement.run(...values), [])))();
    } finally {
      database.close();
    }
  }
  const client = new pg.Client({ connectionString: target.connectionString });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${target.schema.replace(/"/g, '""')}"`);
    await client.query('BEGIN');
    const result = await client.query(sql, params);
    await client.query('COMMIT');
    return result.rows as T[];
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    await client.end();
  }
}
