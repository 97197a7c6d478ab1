// SQL on a test database through the provider's raw driver, as the migrator uses it (upgrade tests write rows the way
// an older release left them, with `$1, $2…` placeholders and unqualified quoted table names).
import Database from 'better-sqlite3';
import pg from 'pg';
import { parseDatabaseUrl } from '../../server/storage/database-url';

/** Runs `text` on the database at `url` and returns its rows. */
export async function sqlOn<T>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const target = parseDatabaseUrl(url);
  if (target.provider === 'sqlite') {
    const sqlite = new Database(target.file);
    try {
      const statement = sqlite.prepare(text.replace(/\$\d+/g, '?'));
      return (statement.reader ? statement.all(...params) : (statement.run(...params), [])) as T[];
    } finally {
      sqlite.close();
    }
  }
  const client = new pg.Client({ connectionString: target.connectionString });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${target.schema}"`);
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}
