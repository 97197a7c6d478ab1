import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { newId } from '../../server/ids';
import { db, dbTarget } from '../../server/storage/db';
import { AsyncLockWaitAdapter, whenUnlocked } from '../../server/storage/sqlite-busy';

// A Prisma transaction that reads and then writes, while another connection (the engine thread's) commits in between.
// With SQLite's deferred BEGIN the read pins a snapshot, the other commit makes it stale, and the write is refused
// with SQLITE_BUSY_SNAPSHOT, which waiting cannot cure: a key revoke answered 500 in CI that way.

const onSqlite = (process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite') === 'sqlite';
const connections: Database.Database[] = [];
afterAll(() => {
  for (const connection of connections) connection.close();
});

it.runIf(onSqlite)('a transaction that reads before it writes survives another connection committing in between', async () => {
  const target = dbTarget();
  if (target.provider !== 'sqlite') throw new Error('unreachable');
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 4 } });
  const otherConnection = new Database(target.file, { timeout: 0 });
  connections.push(otherConnection);
  const rename = otherConnection.prepare('UPDATE "Tenant" SET name = ? WHERE id = ?');

  let otherCommit: Promise<unknown> | undefined;
  await db().$transaction(async (tx) => {
    const tenant = await tx.tenant.findUniqueOrThrow({ where: { id: tenantId } });
    otherCommit = whenUnlocked(() => rename.run(`${tenantId.toLowerCase()}-renamed`, tenantId));
    await new Promise((resolve) => setTimeout(resolve, 20));
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

// Issue 36: `POST /tenants/T/workflows` and `DELETE /tenants/T` answered 503 after 0.07-4 s. Prisma's SQLite adapter
// runs a statement outside a transaction on the connection as it is, even while one of its interactive transactions is
// open there (BEGIN … awaits … COMMIT): a read of another request then ran inside that transaction, pinning a snapshot
// while the transaction still waited for the write lock, and once the engine thread committed, taking the lock failed
// with SQLITE_BUSY_SNAPSHOT (P1008 "Operation has timed out", 503) at once.
it.runIf(onSqlite)('a read of another request while a transaction waits for the write lock does not doom the transaction', async () => {
  const target = dbTarget();
  if (target.provider !== 'sqlite') throw new Error('unreachable');
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 4 } });
  const engine = new Database(target.file, { timeout: 0 });
  connections.push(engine);
  engine.exec('BEGIN IMMEDIATE');
  const started = Date.now();
  const waiting = db()
    .$transaction(async (tx) => {
      await tx.tenant.update({ where: { id: tenantId }, data: { partitions: 16 } });
    })
    .then(() => Date.now() - started);
  await new Promise((resolve) => setTimeout(resolve, 20));
  // Another request's read on the same connection, while the transaction above waits for the lock.
  // (A Prisma call runs once something waits for it: then() starts it now.)
  const read = db()
    .tenant.findMany({ where: { id: tenantId } })
    .then((rows) => rows);
  await new Promise((resolve) => setTimeout(resolve, 20));
  engine.prepare('UPDATE "Tenant" SET name = ? WHERE id = ?').run(`${tenantId.toLowerCase()}-engine`, tenantId);
  engine.exec('COMMIT');
  expect(await read).toHaveLength(1);
  expect(await waiting).toBeLessThan(10_000);
  expect(await db().tenant.findUniqueOrThrow({ where: { id: tenantId } })).toMatchObject({ partitions: 16, name: `${tenantId.toLowerCase()}-engine` });
});

// The same sharing let a write of another request run inside an open transaction: answered as done, it was undone
// when that transaction rolled back (a tenant delete refused for its running instances, say).
it.runIf(onSqlite)('a write of another request while a transaction is open is not undone by its rollback', async () => {
  const name = newId('tn').toLowerCase();
  let outside: Promise<unknown> | undefined;
  await expect(
    db().$transaction(async (tx) => {
      await tx.tenant.count();
      outside = db()
        .tenant.create({ data: { id: newId('tn'), name, partitions: 1 } })
        .then((row) => row);
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new Error('refused');
    }),
  ).rejects.toThrow('refused');
  await outside;
  expect(await db().tenant.findMany({ where: { name } })).toHaveLength(1);
});
