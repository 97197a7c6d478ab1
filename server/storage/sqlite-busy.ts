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

const ROLLBACK: SqlQuery = { sql: 'ROLLBACK', args: [], argTypes: [] };

/**
 * Turns on one connection, first come first served: an interactive transaction holds a turn from its BEGIN to its end,
 * a statement outside a transaction for the (synchronous) moment it runs.
 */
class ConnectionTurns {
  private last: Promise<void> = Promise.resolve();

  /** Resolves, once every earlier turn ended, with the function that ends this one. */
  take(): Promise<() => void> {
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    const previous = this.last;
    this.last = previous.then(() => ended);
    return previous.then(() => end);
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    const end = await this.take();
    try {
      return await work();
    } finally {
      end();
    }
  }
}

/**
 * Prisma's SQLite adapter with every statement run through `whenUnlocked`, and with its one connection shared in turns.
 *
 * Prisma's adapter runs a statement outside a transaction on the connection as it is, even while one of its interactive
 * transactions is open there (BEGIN … the caller's awaits … COMMIT). Another request's statement then ran INSIDE that
 * transaction (issue 36): a write answered as done was undone when the transaction rolled back, and a read pinned a
 * snapshot while the transaction still waited for the write lock, so that once the engine thread committed, taking the
 * lock failed with SQLITE_BUSY_SNAPSHOT (Prisma's P1008 "Operation has timed out", a 503 after 0.07-4 s instead of
 * after the 30 s wait). So a statement outside a transaction waits for the open one to end (ConnectionTurns).
 *
 * A transaction takes the write lock with TAKE_WRITE_LOCK right after its BEGIN; refused for the lock (another
 * connection writes), it rolls back and gives its turn up before it tries again, so this thread's reads go on while it
 * waits. Once it has the lock none of its statements is refused for one. A script is not retried (it may have run
 * half-way).
 */
export class AsyncLockWaitAdapter implements SqlDriverAdapter {
  readonly provider: SqlDriverAdapter['provider'];
  readonly adapterName: string;
  private readonly turns = new ConnectionTurns();

  constructor(private readonly inner: SqlDriverAdapter) {
    this.provider = inner.provider;
    this.adapterName = inner.adapterName;
  }

  queryRaw(query: SqlQuery) {
    return whenUnlocked(() => this.turns.run(() => this.inner.queryRaw(query)));
  }

  executeRaw(query: SqlQuery) {
    return whenUnlocked(() => this.turns.run(() => this.inner.executeRaw(query)));
  }

  executeScript(script: string) {
    return this.turns.run(() => this.inner.executeScript(script));
  }

  startTransaction(...args: Parameters<SqlDriverAdapter['startTransaction']>): Promise<Transaction> {
    return whenUnlocked(async () => {
      const endTurn = await this.turns.take();
      let inner: Transaction;
      try {
        inner = await this.inner.startTransaction(...args);
      } catch (error) {
        endTurn();
        throw error;
      }
      try {
        await inner.executeRaw(TAKE_WRITE_LOCK);
      } catch (error) {
        // The adapter's rollback() only releases its mutex (Prisma sends the SQL of an open transaction's end itself):
        // without this ROLLBACK the connection stayed inside the BEGIN, and every later write went into it.
        await inner.executeRaw(ROLLBACK).catch(() => undefined);
        await inner.rollback();
        endTurn();
        throw error;
      }
      return new AsyncLockWaitTransaction(inner, endTurn);
    });
  }

  dispose() {
    return this.inner.dispose();
  }
}

class AsyncLockWaitTransaction implements Transaction {
  readonly provider: Transaction['provider'];
  readonly adapterName: string;
  readonly options: Transaction['options'];

  constructor(
    private readonly inner: Transaction,
    private readonly endTurn: () => void,
  ) {
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

  async commit() {
    try {
      await this.inner.commit();
    } finally {
      this.endTurn();
    }
  }

  async rollback() {
    try {
      await this.inner.rollback();
    } finally {
      this.endTurn();
    }
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
