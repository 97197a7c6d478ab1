import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

export const PG_BASE_URL = process.env.CROWDFLOW_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type TestDatabase = { url: string; drop(): Promise<void> };

/** A database nobody else uses: a new SQLite file, or a new schema in the shared PostgreSQL `test` database. */
export function createTestDatabase(provider: string, label: string): TestDatabase {
  const id = `${label}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  if (provider === 'postgres') {
    const schema = `cf_${id}`.toLowerCase();
    return {
      url: `${PG_BASE_URL}?schema=${schema}`,
      async drop() {
        const client = new pg.Client({ connectionString: PG_BASE_URL });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await client.end();
      },
    };
  }
  const file = join(process.cwd(), 'data/test', `${id}.db`);
  return {
    url: `file:${file}`,
    async drop() {
      for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
    },
  };
}
