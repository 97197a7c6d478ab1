// Waiting for SQLite's write lock without stopping the thread. SQLite lets one connection write at a time; one that
// finds the lock taken waits in SQLite's busy handler, and under better-sqlite3 (a synchronous driver) that handler
// SLEEPS THE CALLING THREAD. With the engine on a thread of its own (its own connection to the same file), a write of
// the request thread (a procedure step, an API key's last use) then froze every request for as long as an engine
// commit held the lock (a 10M-user start: hundreds of ms). So each connection here has a busy timeout of 0, and a
// statement refused with SQLITE_BUSY is tried again after a timer: the thread answers other work meanwhile.
import type { SqlDriverAdapter, SqlQuery, Transaction } from '@prisma/driver-adapter-utils';

/** How long a statement keeps trying for the lock before its SQLITE_BUSY is thrown (the former busy timeout). */
export const LOCK_WAIT_MS = 30_000;
/** The longest pause between two tries: short next to a commit, so the lock is taken soon after it is free. */
const MAX_PAUSE_MS = 8;

/**
 * Whether SQLite refused for a lock held by another connection (better-sqlite3's error, or Prisma's adapter error
 * wrapping it). Not SQLITE_BUSY_SNAPSHOT: a transaction whose snapshot went stale never succeeds by trying again.
 */
export function isSqliteBusy(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, cause } = error as { code?: unknown; cause?: { originalCode?: unknown } };
  const sqliteCode = typeof code === 'string' ? code : cause?.originalCode;
  return sqliteCode === 'SQLITE_BUSY' || sqliteCode === 'SQLITE_BUSY_RECOVERY';
}

/** Runs `attempt` until it is not refused for a lock, pausing on a timer between tries (1, 2, 4, 8, 8… ms). */
export async function whenUnlocked<T>(attempt: () => T | Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let pause = 1; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    try {
      return await attempt();
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() >= deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * A write that changes nothing, run first in every transaction so that it holds the write lock from its start (what
 * BEGIN IMMEDIATE would do; the adapter's BEGIN is deferred). Otherwise a transaction that reads before it writes
 * pins a snapshot with the read, another connection (the engine thread's) commits, and the write is refused with
 * SQLITE_BUSY_SNAPSHOT, which no waiting cures: a key revoke answered 500 that way. The migrations table is in every
 * database this process opens.
 */
const TAKE_WRITE_LOCK: SqlQuery = { sql: 'DELETE FROM "_prisma_migrations" WHERE 0', args: [], argTypes: [] };

/**
 * Prisma's SQLite adapter with every statement run through `whenUnlocked`. A script is not retried (it may have run
 * half-way). A transaction takes the write lock with TAKE_WRITE_LOCK, waiting for it like any statement; after that
 * none of its statements is refused for a lock.
 */
export class AsyncLockWaitAdapter implements SqlDriverAdapter {
  readonly provider: SqlDriverAdapter['provider'];
  readonly adapterName: string;

  constructor(private readonly inner: SqlDriverAdapter) {
    this.provider = inner.provider;
    this.adapterName = inner.adapterName;
  }

  queryRaw(query: SqlQuery) {
    return whenUnlocked(() => this.inner.queryRaw(query));
  }

  executeRaw(query: SqlQuery) {
    return whenUnlocked(() => this.inner.executeRaw(query));
  }

  executeScript(script: string) {
    return this.inner.executeScript(script);
  }

  async startTransaction(...args: Parameters<SqlDriverAdapter['startTransaction']>): Promise<Transaction> {
    const transaction = new AsyncLockWaitTransaction(await this.inner.startTransaction(...args));
    try {
      await transaction.executeRaw(TAKE_WRITE_LOCK);
    } catch (error) {
      // The adapter's rollback() only releases its mutex (Prisma sends the SQL of an open transaction's end itself):
      // without this ROLLBACK the connection stayed inside the BEGIN, and every later write went into it.
      await transaction.executeRaw({ sql: 'ROLLBACK', args: [], argTypes: [] }).catch(() => undefined);
      await transaction.rollback();
      throw error;
    }
    return transaction;
  }

  dispose() {
    return this.inner.dispose();
  }
}

class AsyncLockWaitTransaction implements Transaction {
  readonly provider: Transaction['provider'];
  readonly adapterName: string;
  readonly options: Transaction['options'];

  constructor(private readonly inner: Transaction) {
    this.provider = inner.provider;
    this.adapterName = inner.adapterName;
    this.options = inner.options;
  }

  // A statement refused with plain SQLITE_BUSY did nothing, so it can go again inside the same transaction.
  queryRaw(query: SqlQuery) {
    return whenUnlocked(() => this.inner.queryRaw(query));
  }

  executeRaw(query: SqlQuery) {
    return whenUnlocked(() => this.inner.executeRaw(query));
  }

  commit() {
    return this.inner.commit();
  }

  rollback() {
    return this.inner.rollback();
  }

  async createSavepoint(name: string) {
    await whenUnlocked(() => this.inner.createSavepoint?.(name));
  }

  async rollbackToSavepoint(name: string) {
    await this.inner.rollbackToSavepoint?.(name);
  }

  async releaseSavepoint(name: string) {
    await this.inner.releaseSavepoint?.(name);
  }
}
