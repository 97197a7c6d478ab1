import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { DatabaseTarget } from './database-url';
import { connectClient } from './pg-connect';

// Applies prisma/migrations/<provider>/*/migration.sql in order, recording each in Prisma's own
// `_prisma_migrations` layout (checksum = sha256 of the file) so the real CLI would agree.
// Raw drivers, not Prisma: the PG adapter splits scripts on `;` and cannot wrap them in a transaction.

const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

type Migration = { name: string; sql: string; checksum: string };

export function migrationsDir(provider: DatabaseTarget['provider']): string {
  return join(/*turbopackIgnore: true*/ process.cwd(), 'prisma/migrations', provider);
}

function loadMigrations(provider: DatabaseTarget['provider']): Migration[] {
  const dir = migrationsDir(provider);
  return readdirSync(dir)
    .filter((name) => /^\d{14}_/.test(name))
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/**
 * Returns the names of the migrations applied by this call. `before` stops at the first migration whose name
 * (e.g. `20261130120415_event_log_bytes`) is not earlier: a database as an older release left it, to test upgrades.
 */
export async function applyMigrations(target: DatabaseTarget, options: { before?: string } = {}): Promise<string[]> {
  const { before } = options;
  const migrations = loadMigrations(target.provider).filter((m) => before === undefined || m.name < before);
  return target.provider === 'sqlite' ? applySqlite(target.file, migrations) : applyPostgres(target, migrations);
}

function applySqlite(file: string, migrations: Migration[]): string[] {
  mkdirSync(dirname(file), { recursive: true });
  const sqlite = new Database(file, { timeout: 30_000 });
  try {
    sqlite.pragma('journal_mode = WAL');
    sqlite.exec(MIGRATIONS_TABLE.replace('now()', 'CURRENT_TIMESTAMP').replace(/TIMESTAMPTZ/g, 'DATETIME'));
    const done = new Set(
      sqlite
        .prepare('SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL')
        .all()
        .map((r) => (r as { migration_name: string }).migration_name),
    );
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      // Not in a transaction: with foreign keys on, a table redefinition inside BEGIN…COMMIT cascades deletes.
      sqlite.exec(m.sql);
      sqlite
        .prepare('INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count) VALUES (?, ?, CURRENT_TIMESTAMP, ?, 1)')
        .run(randomUUID(), m.checksum, m.name);
      applied.push(m.name);
    }
    return applied;
  } finally {
    sqlite.close();
  }
}

async function applyPostgres(target: Extract<DatabaseTarget, { provider: 'postgres' }>, migrations: Migration[]): Promise<string[]> {
  // A member started beside others waits here for PostgreSQL to have a connection for it (53300), instead of exiting.
  const client = await connectClient(target.connectionString, 'migrations');
  const schema = `"${target.schema.replace(/"/g, '""')}"`;
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`SET search_path TO ${schema}`);
    // Several app processes may start at once: one applies, the others wait and then see it done.
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`crowdflow-migrate:${target.schema}`]);
    await client.query(MIGRATIONS_TABLE);
    const { rows } = await client.query('SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL');
    const done = new Set(rows.map((r: { migration_name: string }) => r.migration_name));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql.replace(/CREATE SCHEMA IF NOT EXISTS "public";/, ''));
        await client.query('INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count) VALUES ($1, $2, now(), $3, 1)', [
          randomUUID(),
          m.checksum,
          m.name,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
      applied.push(m.name);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock_all()').catch(() => {});
    await client.end();
  }
}
