import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll } from 'vitest';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import type { Db } from '../../server/storage/db';
import { PrismaClient as PostgresClient } from '../../server/storage/generated/postgres/client';
import { PrismaClient as SqliteClient } from '../../server/storage/generated/sqlite/client';
import { PG_BASE_URL } from './test-database';

// What the tests that provoke real storage errors share (test/unit/transient-storage.test.ts and
// test/unit/faulty-database.test.ts): the provider under test, the error a call throws, and the connections, roles and
// locks that provoke errors, each undone after the file.

export const testProvider = (process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite') as 'sqlite' | 'postgres';

/** The error `work` throws (or rejects with); fails when it succeeds. */
export async function caught(work: () => unknown): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

export type LockedSqlite = { holder: BetterSqlite3.Database; impatient: Db; raw: BetterSqlite3.Database; release(): void };

/** Call in a test file's body: what it provokes with is closed, dropped or released after the file, newest first. */
export function useRealStorageErrors(prefix: string) {
  const cleanups: (() => unknown)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const defer = (cleanup: () => unknown) => void cleanups.push(cleanup);

  return {
    defer,

    async pgAdmin(): Promise<pg.Client> {
      const admin = new pg.Client({ connectionString: PG_BASE_URL });
      await admin.connect();
      defer(() => admin.end());
      return admin;
    },

    /** The URL of a role PostgreSQL refuses every connection of (CONNECTION LIMIT 0): what a server at max_connections answers, 53300. */
    async exhaustedRole(admin: pg.Client): Promise<string> {
      const role = `${prefix}_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
      await admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
      defer(() => admin.query(`DROP ROLE IF EXISTS ${role}`));
      return PG_BASE_URL.replace('postgres@', `${role}@`);
    },

    /** A table of its own (`id int PRIMARY KEY, v int` holding rows 1…`rows`, each v 0), dropped after the file. */
    async scratchTable(admin: pg.Client, rows = 1): Promise<string> {
      const table = `${prefix}_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
      const values = Array.from({ length: rows }, (_, i) => `(${i + 1}, 0)`).join(', ');
      await admin.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v int); INSERT INTO ${table} VALUES ${values}`);
      defer(() => admin.query(`DROP TABLE IF EXISTS ${table}`));
      return table;
    },

    /** A Prisma client on `url` with a pool of one connection (unless `options` say otherwise). */
    prismaPg(url: string, options: Partial<pg.PoolConfig> = {}): PostgresClient {
      const client = new PostgresClient({ adapter: new PrismaPg({ connectionString: url, max: 1, ...options }) });
      defer(() => client.$disconnect());
      return client;
    },

    /** A second connection to the test's SQLite file holding the write lock, and clients that do not wait for it. */
    lockedSqlite(): LockedSqlite {
      const target = parseDatabaseUrl(process.env.DATABASE_URL!);
      if (target.provider !== 'sqlite') throw new Error('not SQLite');
      const holder = new BetterSqlite3(target.file);
      const raw = new BetterSqlite3(target.file, { timeout: 0 });
      const impatient = new SqliteClient({ adapter: new PrismaBetterSqlite3({ url: `file:${target.file}`, timeout: 0 }) }) as unknown as Db;
      holder.exec('BEGIN IMMEDIATE');
      const release = () => holder.inTransaction && holder.exec('ROLLBACK');
      defer(async () => {
        release();
        holder.close();
        raw.close();
        await impatient.$disconnect();
      });
      return { holder, impatient, raw, release };
    },
  };
}
