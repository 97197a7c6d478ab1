import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { applyMigrations } from '../../server/storage/migrate';

export const PG_BASE_URL = process.env.CROWDFLOW_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type TestDatabase = { url: string; drop(): Promise<void> };

const uniqueId = (label: string) => `${label}_${randomUUID().replace(/-/g, '').slice(0, 12)}`.toLowerCase();
const sqliteFile = (id: string) => join(process.cwd(), 'data/test', `${id}.db`);

/** A database nobody else uses: a new SQLite file, or a new schema in the shared PostgreSQL `test` database. */
export function createTestDatabase(provider: string, label: string): TestDatabase {
  const id = uniqueId(label);
  if (provider === 'postgres') {
    const schema = `cf_${id}`;
    return {
      url: `${PG_BASE_URL}?schema=${schema}`,
      drop: () => onPostgres((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)),
    };
  }
  return sqliteDatabase(sqliteFile(id));
}

/**
 * A migrated database that test files copy (copyTestDatabase): a SQLite file, or a PostgreSQL database of its own
 * (its schema `crowdflow`), since PostgreSQL copies whole databases (CREATE DATABASE … TEMPLATE), not schemas.
 */
export async function createTemplateDatabase(provider: string, label: string): Promise<TestDatabase> {
  const id = uniqueId(label);
  const template = provider === 'postgres' ? await postgresDatabase(`cf_${id}`) : sqliteDatabase(sqliteFile(id));
  await applyMigrations(parseDatabaseUrl(template.url));
  return template;
}

/**
 * A database nobody else uses, as `templateUrl` (createTemplateDatabase) left it: a copy of the SQLite file, or a
 * PostgreSQL database made from it. A copy takes ~0.1 s, where migrating an empty one took ~1 s on PostgreSQL.
 */
export async function copyTestDatabase(templateUrl: string, label: string): Promise<TestDatabase> {
  const id = uniqueId(label);
  const template = parseDatabaseUrl(templateUrl);
  if (template.provider === 'sqlite') {
    const file = sqliteFile(id);
    mkdirSync(dirname(file), { recursive: true });
    copyFileSync(template.file, file);
    return sqliteDatabase(file);
  }
  return postgresDatabase(`cf_${id}`, new URL(templateUrl).pathname.slice(1));
}

function sqliteDatabase(file: string): TestDatabase {
  return {
    url: `file:${file}`,
    async drop() {
      for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
    },
  };
}

/** A new PostgreSQL database (a copy of `template` if given) whose schema is `crowdflow`. */
async function postgresDatabase(name: string, template?: string): Promise<TestDatabase> {
  await onPostgres((client) => client.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`));
  const url = new URL(PG_BASE_URL);
  url.pathname = `/${name}`;
  url.searchParams.set('schema', 'crowdflow');
  return {
    url: url.toString(),
    // FORCE ends connections a test left open, which would otherwise make the drop fail.
    drop: () => onPostgres((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  };
}

async function onPostgres(work: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: PG_BASE_URL });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}
