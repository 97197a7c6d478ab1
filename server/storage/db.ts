import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import type BetterSqlite3 from 'better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient as SqliteClient, type Prisma } from './generated/sqlite/client';
import { PrismaClient as PostgresClient } from './generated/postgres/client';
import { env } from '../env';
import { parseDatabaseUrl, type DatabaseTarget, type PostgresTarget } from './database-url';
import { AsyncLockWaitAdapter, LOCK_WAIT_MS } from './sqlite-busy';
import { startCheckpointer, type Checkpointer } from './sqlite-checkpointer';
import { runtime } from '../runtime';
import type { RawDb } from './raw';

/** Both generated clients have the same models; the SQLite one's type stands for both. */
export type Db = SqliteClient;
export type Tx = Prisma.TransactionClient;

/** The process's storage (held by the runtime, server/runtime.ts): the Prisma client and, once opened, the raw driver. */
export type Storage = { db: Db; target: DatabaseTarget; sqlite?: SharedSqliteAdapter; raw?: Promise<RawDb> };

/** Hands out the better-sqlite3 connection it opens for Prisma, so raw statements share it (server/storage/raw.ts). */
class SharedSqliteAdapter extends PrismaBetterSqlite3 {
  readonly connection: Promise<BetterSqlite3.Database>;
  checkpointer: Checkpointer | undefined;
  private opened!: (connection: BetterSqlite3.Database) => void;

  constructor(private readonly file: string) {
    // No busy timeout: SQLite's busy handler would sleep this thread; statements wait for the lock on a timer instead.
    super({ url: `file:${file}`, timeout: 0 });
    this.connection = new Promise((resolve) => (this.opened = resolve));
  }

  override async connect() {
    const adapter = await super.connect();
    const connection = (adapter as unknown as { client: BetterSqlite3.Database }).client;
    try {
      this.checkpointer ??= startCheckpointer(connection, this.file);
    } catch (error) {
      // Without the worker, SQLite checkpoints inside commits as it always did.
      console.warn('[crowdflow] could not start the SQLite checkpoint worker:', error instanceof Error ? error.message : error);
    }
    this.opened(connection);
    return new AsyncLockWaitAdapter(adapter);
  }
}

// Interactive transactions get the same patience as a statement waiting for SQLite's lock: Prisma's 2 s / 5 s defaults
// turned a key revoke or a consumer upsert into a 500 when an engine commit held the lock on a loaded machine.
const transactionOptions = { maxWait: LOCK_WAIT_MS, timeout: 2 * LOCK_WAIT_MS };

function createStorage(target: DatabaseTarget): Storage {
  if (target.provider === 'sqlite') {
    mkdirSync(dirname(target.file), { recursive: true });
    const adapter = new SharedSqliteAdapter(target.file);
    return { db: new SqliteClient({ adapter, transactionOptions }), target, sqlite: adapter };
  }
  const adapter = new PrismaPg({ connectionString: target.connectionString, max: 10 }, { schema: target.schema });
  return { db: new PostgresClient({ adapter, transactionOptions }) as unknown as Db, target };
}

/** The process's storage, built from DATABASE_URL on first use (and again after closeDb()). */
export function storage(): Storage {
  const held = runtime();
  return (held.storage ??= createStorage(parseDatabaseUrl(env().DATABASE_URL)));
}

/** The one Prisma client of this process. */
export function db(): Db {
  return storage().db;
}

export function dbTarget(): DatabaseTarget {
  return storage().target;
}

/**
 * The database several processes can run on together, for the connections a cluster holds of its own (LISTEN, advisory
 * locks); undefined when the storage is one process's alone (SQLite: its file lock is the only coordination it has).
 */
export function sharedDatabaseTarget(): PostgresTarget | undefined {
  const target = dbTarget();
  return target.provider === 'postgres' ? target : undefined;
}

/** The SQLite connection under the Prisma client (opened by its first query). */
export async function connectedSqlite(holder: Storage = storage()): Promise<BetterSqlite3.Database> {
  if (!holder.sqlite) throw new Error('The database is not SQLite');
  await holder.db.$connect();
  return holder.sqlite.connection;
}

/** The background checkpointer of the SQLite database (server/storage/sqlite-checkpointer.ts), once connected. */
export function sqliteCheckpointer(): Checkpointer | undefined {
  return runtime().storage?.sqlite?.checkpointer;
}

export async function closeDb(): Promise<void> {
  const holder = runtime().storage;
  runtime().storage = undefined;
  await (await holder?.raw)?.close();
  await holder?.sqlite?.checkpointer?.stop();
  await holder?.db.$disconnect();
}
