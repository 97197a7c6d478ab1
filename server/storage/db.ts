import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient as SqliteClient, type Prisma } from './generated/sqlite/client';
import { PrismaClient as PostgresClient } from './generated/postgres/client';
import { env } from '../env';
import { parseDatabaseUrl, type DatabaseTarget } from './database-url';

/** Both generated clients have the same models; the SQLite one's type stands for both. */
export type Db = SqliteClient;
export type Tx = Prisma.TransactionClient;

type Holder = { db: Db; target: DatabaseTarget };
const globalKey = Symbol.for('crowdflow.db');
const store = globalThis as unknown as Record<symbol, Holder | undefined>;

function createClient(target: DatabaseTarget): Db {
  if (target.provider === 'sqlite') {
    mkdirSync(dirname(target.file), { recursive: true });
    const adapter = new PrismaBetterSqlite3({ url: `file:${target.file}`, timeout: 30_000 });
    return new SqliteClient({ adapter });
  }
  const adapter = new PrismaPg({ connectionString: target.connectionString, max: 10 }, { schema: target.schema });
  return new PostgresClient({ adapter }) as unknown as Db;
}

/** The one Prisma client of this process (kept on globalThis so Next.js dev reloads reuse it). */
export function db(): Db {
  let holder = store[globalKey];
  if (!holder) {
    const target = parseDatabaseUrl(env().DATABASE_URL);
    holder = { db: createClient(target), target };
    store[globalKey] = holder;
  }
  return holder.db;
}

export function dbTarget(): DatabaseTarget {
  db();
  return store[globalKey]!.target;
}

export async function closeDb(): Promise<void> {
  const holder = store[globalKey];
  store[globalKey] = undefined;
  await holder?.db.$disconnect();
}
