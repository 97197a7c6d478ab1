import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { newId } from '../../server/ids';
import { db, appStorage } from '../helpers/app-db';
import type { SqlDriverAdapter, SqlDriverAdapterFactory, SqlQuery, Transaction } from '@prisma/driver-adapter-utils';
import { PrismaClient as SqliteClient } from '../../server/storage/generated/sqlite/client';
import { AsyncLockWaitAdapter, isSqliteBusy, LOCK_WAIT_MS, whenUnlocked } from '../../server/storage/sqlite-busy';

// A Prisma transaction that reads and then writes, while another connection (the engine thread's) commits in between.
// With SQLite's deferred BEGIN the read pins a snapshot, the other commit makes it stale, and the write is refused
// with SQLITE_BUSY_SNAPSHOT, which waiting cannot cure: a key revoke answered 500 in CI that way.

const onSqlite = (process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite') === 'sqlite';
const connections: Database.Database[] = [];
afterAll(() => {
  for (const connection of connections) connection.close();
});

it.runIf(onSqlite)('a transaction that reads before it writes survives another connection committing in between', async () => {
  const target = appStorage().target;
  if (target.provider !== 'sqlite') throw new Error('unreachable');
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 4 } });
  const otherConnection = new Database(target.file, { timeout: 0 });
  connections.push(otherConnection);
  const rename = otherConnection.prepare('UPDATE "Tenant" SET name = ? WHERE id = ?');

  let otherCommit: Promise<unknown> | undefined;
  const otherRefused = signal();
  await db().$transaction(async (tx) => {
    const tenant = await tx.tenant.findUniqueOrThrow({ where: { id: tenantId } });
    otherCommit = whenUnlocked(() => {
      try {
        return rename.run(`${tenantId.toLowerCase()}-renamed`, tenantId);
      } catch (error) {
        if (isSqliteBusy(error)) otherRefused.resolve();
        throw error;
      }
    });
    // The other connection tried to commit while this transaction held the lock (it tries again after it), or, were
    // the lock not held, committed in between: the write below then meets the stale snapshot.
    await Promise.race([otherRefused.promise, otherCommit]);
    await tx.tenant.update({ where: { id: tenantId }, data: { partitions: tenant.partitions * 2 } });
  });
  await otherCommit;

  const after = await db().tenant.findUniqueOrThrow({ where: { id: tenantId } });
  expect(after.partitions).toBe(8);
  expect(after.name).toBe(`${tenantId.toLowerCase()}-renamed`);
});

it.runIf(onSqlite)('a transaction whose write lock cannot be taken leaves the connection out of it: later writes commit', async () => {
  // A database without the migrations table: the statement that takes the lock fails at once, as one refused for
  // the lock past its wait would.
  const file = join(mkdtempSync(join(tmpdir(), 'crowdflow-lock-')), 'scratch.db');
  const adapter = new AsyncLockWaitAdapter(await new PrismaBetterSqlite3({ url: `file:${file}` }).connect());
  const query = (sql: string) => ({ sql, args: [], argTypes: [] });
  try {
    await expect(adapter.startTransaction()).rejects.toThrow(/TableDoesNotExist/);
    await adapter.executeRaw(query('CREATE TABLE t (v INTEGER)'));
    await adapter.executeRaw(query('INSERT INTO t VALUES (7)'));
    const otherConnection = new Database(file, { readonly: true });
    connections.push(otherConnection);
    expect(otherConnection.prepare('SELECT v FROM t').all()).toEqual([{ v: 7 }]);
    // And the adapter's lock on transactions was released: the next one starts (and fails the same way).
    await expect(adapter.startTransaction()).rejects.toThrow(/TableDoesNotExist/);
  } finally {
    await adapter.dispose();
  }
});

/** A promise and its resolver. */
function signal() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** `target` with some of its methods replaced; the rest called on it as they are. */
function overriding<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get(object, key) {
      if (Object.hasOwn(overrides, key)) return overrides[key as keyof T];
      const value = Reflect.get(object, key);
      return typeof value === 'function' ? value.bind(object) : value;
    },
  });
}

/**
 * A Prisma client on `file` over the adapter the server uses (AsyncLockWaitAdapter), which tells the test when a
 * transaction was refused the write lock (it then waits on a timer) and when a statement reached the adapter outside a
 * transaction, so the test orders its steps by what happened instead of by sleeping.
 */
function watchedClient(file: string) {
  const lockRefused = signal();
  const outsideStatement = signal();
  const refusalsSeen = (tx: Transaction) =>
    overriding(tx, {
      executeRaw: (query: SqlQuery) =>
        tx.executeRaw(query).catch((error: unknown) => {
          if (isSqliteBusy(error)) lockRefused.resolve();
          throw error;
        }),
    });
  const driver = new PrismaBetterSqlite3({ url: `file:${file}`, timeout: 0 });
  const factory: SqlDriverAdapterFactory = {
    provider: driver.provider,
    adapterName: driver.adapterName,
    async connect() {
      const inner = await driver.connect();
      const server = new AsyncLockWaitAdapter(
        overriding(inner, {
          startTransaction: async (...args: Parameters<SqlDriverAdapter['startTransaction']>) => refusalsSeen(await inner.startTransaction(...args)),
        }),
      );
      return overriding<SqlDriverAdapter>(server, {
        queryRaw: (query) => (outsideStatement.resolve(), server.queryRaw(query)),
        executeRaw: (query) => (outsideStatement.resolve(), server.executeRaw(query)),
      });
    },
  };
  const client = new SqliteClient({ adapter: factory, transactionOptions: { maxWait: LOCK_WAIT_MS, timeout: 2 * LOCK_WAIT_MS } });
  return { client, lockRefused: lockRefused.promise, outsideStatement: outsideStatement.promise };
}

// Issue 36: `POST /tenants/T/workflows` and `DELETE /tenants/T` answered 503 after 0.07-4 s. Prisma's SQLite adapter
// runs a statement outside a transaction on the connection as it is, even while one of its interactive transactions is
// open there (BEGIN … awaits … COMMIT): a read of another request then ran inside that transaction, pinning a snapshot
// while the transaction still waited for the write lock, and once the engine thread committed, taking the lock failed
// with SQLITE_BUSY_SNAPSHOT (P1008 "Operation has timed out", 503) at once.
it.runIf(onSqlite)('a read of another request while a transaction waits for the write lock does not doom the transaction', async () => {
  const target = appStorage().target;
  if (target.provider !== 'sqlite') throw new Error('unreachable');
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 4 } });
  const engine = new Database(target.file, { timeout: 0 });
  connections.push(engine);
  const { client, lockRefused } = watchedClient(target.file);
  try {
    engine.exec('BEGIN IMMEDIATE');
    const waiting = client.$transaction(async (tx) => {
      await tx.tenant.update({ where: { id: tenantId }, data: { partitions: 16 } });
    });
    await lockRefused;
    // Another request's read on the same connection, while the transaction above waits for the lock: it is answered.
    expect(await client.tenant.findMany({ where: { id: tenantId } })).toHaveLength(1);
    engine.prepare('UPDATE "Tenant" SET name = ? WHERE id = ?').run(`${tenantId.toLowerCase()}-engine`, tenantId);
    engine.exec('COMMIT');
    await waiting;
    expect(await db().tenant.findUniqueOrThrow({ where: { id: tenantId } })).toMatchObject({ partitions: 16, name: `${tenantId.toLowerCase()}-engine` });
  } finally {
    await client.$disconnect();
  }
});

// The same sharing let a write of another request run inside an open transaction: answered as done, it was undone
// when that transaction rolled back (a tenant delete refused for its running instances, say).
it.runIf(onSqlite)('a write of another request while a transaction is open is not undone by its rollback', async () => {
  const target = appStorage().target;
  if (target.provider !== 'sqlite') throw new Error('unreachable');
  const { client, outsideStatement } = watchedClient(target.file);
  const name = newId('tn').toLowerCase();
  let outside: Promise<unknown> | undefined;
  try {
    await expect(
      client.$transaction(async (tx) => {
        await tx.tenant.count();
        outside = client.tenant.create({ data: { id: newId('tn'), name, partitions: 1 } }).then((row) => row);
        await outsideStatement;
        // The write reached the connection; had it run inside this transaction, it would be done by the next turn.
        await new Promise((resolve) => setImmediate(resolve));
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    await outside;
    expect(await db().tenant.findMany({ where: { name } })).toHaveLength(1);
  } finally {
    await client.$disconnect();
  }
});
