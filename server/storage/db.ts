import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import type BetterSqlite3 from 'better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient as SqliteClient, type Prisma } from './generated/sqlite/client';
import { PrismaClient as PostgresClient } from './generated/postgres/client';
import { parseDatabaseUrl, type DatabaseTarget, type PostgresTarget } from './database-url';
import { AsyncLockWaitAdapter, LOCK_WAIT_MS } from './sqlite-busy';
import { startCheckpointer, type Checkpointer } from './sqlite-checkpointer';
import { PatientPool } from './pg-connect';
import type { RawDb } from './raw';

/** Both generated clients have the same models; the SQLite one's type stands for both. */
export type Db = SqliteClient;
export type Tx = Prisma.TransactionClient;

/**
 * A thread's storage (built by its app, server/create-app.ts): the Prisma client and, once opened, the raw driver;
 * on PostgreSQL the one connection pool of this thread, which both use.
 */
export type Storage = { db: Db; target: DatabaseTarget; sqlite?: SharedSqliteAdapter; pgPool?: PatientPool; raw?: Promise<RawDb> };

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

/**
 * Opens the storage of `target` (the client connects on its first query); closeStorage() closes it. `poolMax`: the
 * connections its PostgreSQL pool may hold (CROWDFLOW_PG_POOL_MAX), ENGINE_POOL_MAX when unset.
 */
export function openStorage(target: DatabaseTarget, poolMax = ENGINE_POOL_MAX): Storage {
  if (target.provider === 'sqlite') {
    mkdirSync(dirname(target.file), { recursive: true });
    const adapter = new SharedSqliteAdapter(target.file);
    return { db: new SqliteClient({ adapter, transactionOptions }), target, sqlite: adapter };
  }
  const pgPool = new PatientPool(target.connectionString, 'pool', poolMax);
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pgPool.on('error', (error) => console.warn('[crowdflow] idle PostgreSQL connection lost:', error.message));
  const adapter = new PrismaPg(pgPool, { schema: target.schema });
  return { db: new PostgresClient({ adapter, transactionOptions }) as unknown as Db, target, pgPool };
}

/**
 * Connections a thread's pool holds at most (opened on demand, closed after 10 s idle). A thread running the engine
 * needs 10: partition commits queue for the journal lock while holding one, and with 4 they left ingest waiting
 * (PostgreSQL events end to end 92,000/s; with 10, 150,000-176,000/s). Prisma and the raw driver share the pool (they
 * held 10 each before).
 */
const ENGINE_POOL_MAX = 10;
/** The request thread of a server whose engine has a thread of its own: route handlers, procedures, the scheduler and
 * webhook rounds run short statements. */
const REQUEST_POOL_MAX = 5;

/** Boot hands the engine to a thread of its own: this thread's pool then needs fewer connections, unless `poolMax`
 * (CROWDFLOW_PG_POOL_MAX) says how many. */
export function poolForRequestsOnly(held: Storage, poolMax = REQUEST_POOL_MAX): void {
  held.pgPool?.resize(poolMax);
}

/**
 * The database several processes can run on together, for the connections a cluster holds of its own (LISTEN, advisory
 * locks); undefined when the storage is one process's alone (SQLite: its file lock is the only coordination it has).
 */
export function sharedDatabaseTarget(of: DatabaseTarget, directUrl: string | undefined): PostgresTarget | undefined {
  const target = directDatabaseTarget(of, directUrl);
  return target.provider === 'postgres' ? target : undefined;
}

/**
 * The database for connections that need a session of their own: LISTEN, session advisory locks, the migrations'
 * `SET search_path`, which a transaction-pooling PgBouncer does not keep (docs/cluster.md "Behind PgBouncer"). The same schema, on the
 * server `directUrl` (CROWDFLOW_DIRECT_DATABASE_URL) names when set.
 */
export function directDatabaseTarget(target: DatabaseTarget, directUrl: string | undefined): DatabaseTarget {
  if (target.provider !== 'postgres' || !directUrl) return target;
  const parsed = parseDatabaseUrl(directUrl);
  if (parsed.provider !== 'postgres') throw new Error('CROWDFLOW_DIRECT_DATABASE_URL must be a postgres:// URL, like DATABASE_URL');
  return { ...target, connectionString: parsed.connectionString };
}

/** The SQLite connection under the Prisma client (opened by its first query). */
export async function connectedSqlite(holder: Storage): Promise<BetterSqlite3.Database> {
  if (!holder.sqlite) throw new Error('The database is not SQLite');
  await holder.db.$connect();
  return holder.sqlite.connection;
}

/** Closes what openStorage() opened: the raw driver, the SQLite checkpointer, the Prisma client, the pool. */
export async function closeStorage(holder: Storage): Promise<void> {
  await (await holder.raw)?.close();
  await holder.sqlite?.checkpointer?.stop();
  await holder.db.$disconnect();
  await holder.pgPool?.end();
}
