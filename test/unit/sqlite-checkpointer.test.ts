import { afterAll, expect, it } from 'vitest';
import { app } from '../../server/app';
import Database from 'better-sqlite3';
import { appendEvents } from '../../server/engine/ingest';
import { newId } from '../../server/ids';
import { connectedSqlite } from '../../server/storage/db';
import { db, appStorage, database } from '../helpers/app-db';
import { startCheckpointer } from '../../server/storage/sqlite-checkpointer';
import { createTestDatabase } from '../helpers/test-database';

const onSqlite = (process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite') === 'sqlite';
const scratch = createTestDatabase('sqlite', 'checkpoint');
afterAll(() => scratch.drop());

/** A WAL-mode database of its own with one table, as the app's connection would be. */
function scratchConnection(): { connection: Database.Database; file: string } {
  const file = scratch.url.replace(/^file:/, '');
  const connection = new Database(file);
  connection.pragma('journal_mode = WAL');
  connection.exec('CREATE TABLE IF NOT EXISTS t (v BLOB)');
  return { connection, file };
}

it.runIf(onSqlite)('the worker checkpoints the write-ahead log on its own; the writer only past a 64 MiB backstop', async () => {
  const connection = await connectedSqlite(appStorage());
  expect(Number(connection.pragma('wal_autocheckpoint', { simple: true }))).toBe(16_384);
  expect(Number(connection.pragma('journal_size_limit', { simple: true }))).toBe(64 * 1024 * 1024);

  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 4, userBlock: 1 } });
  const text = 'x'.repeat(2_000); // about 8 MB of log rows, past SQLite's default 1,000 pages
  for (let batch = 0; batch < 40; batch++) {
    await appendEvents(
      database(),
      app().state,
      tenantId,
      Array.from({ length: 100 }, (_, i) => ({ user: batch * 100 + i, type: 'page', data: { text: `${batch}:${i}:${text}` }, time: 1 })),
    );
  }
  // Periodic runs, none asked for. Whether a run lands between two appends (or reports an earlier one after them:
  // better-sqlite3 holds the thread while it writes) is timing; that one of them brings the log in is not. The
  // writer does not (its backstop is 64 MiB): a run that brought part of it in is followed by one that brings the rest.
  let run = await appStorage().sqlite!.checkpointer!.nextRun();
  while (run.checkpointed === 0 || run.checkpointed < run.log) run = await appStorage().sqlite!.checkpointer!.nextRun();
  expect(run.log).toBeGreaterThan(0);
  expect(run.checkpointed).toBe(run.log);
  expect(await db().eventLog.count({ where: { tenantId } })).toBe(160);
});

it.runIf(onSqlite)('a stopped worker answers no more and leaves the writer as it was configured', async () => {
  const { connection, file } = scratchConnection();
  const checkpointer = startCheckpointer(connection, file, { everyMs: 10 });
  connection.prepare('INSERT INTO t VALUES (?)').run(Buffer.alloc(100_000));
  expect((await checkpointer.now()).checkpointed).toBeGreaterThan(0);
  await checkpointer.stop();
  await expect(checkpointer.now()).rejects.toThrow(/stopped/);
  await expect(checkpointer.nextRun()).rejects.toThrow(/stopped/);
  expect(Number(connection.pragma('wal_autocheckpoint', { simple: true }))).toBe(16_384);
  connection.close();
});

it.runIf(onSqlite)('a worker that dies hands checkpoints back to the writer (SQLite default of 1,000 pages)', async () => {
  const { connection, file } = scratchConnection();
  const checkpointer = startCheckpointer(connection, file, { everyMs: 10, driver: '/nonexistent/better-sqlite3.js' });
  await expect(checkpointer.now()).rejects.toThrow(/exited/);
  expect(Number(connection.pragma('wal_autocheckpoint', { simple: true }))).toBe(1_000);
  await checkpointer.stop(); // already gone: returns at once
  connection.close();
});
