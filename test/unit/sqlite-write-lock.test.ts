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
