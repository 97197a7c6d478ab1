import { expect, it } from 'vitest';
import { appendEvents } from '../../server/engine/ingest';
import { newId } from '../../server/ids';
import { connectedSqlite, db, dbTarget, sqliteCheckpointer } from '../../server/storage/db';

const onSqlite = (process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite') === 'sqlite';

it.runIf(onSqlite)('a worker thread checkpoints the write-ahead log; the writer only does past a 64 MiB backstop', async () => {
  expect(dbTarget().provider).toBe('sqlite');
  const connection = await connectedSqlite();
  expect(Number(connection.pragma('wal_autocheckpoint', { simple: true }))).toBe(16_384);
  expect(Number(connection.pragma('journal_size_limit', { simple: true }))).toBe(64 * 1024 * 1024);

  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 4 } });
  const text = 'x'.repeat(2_000); // incompressible enough: about 8 MB of log rows, past SQLite's default 1,000 pages
  for (let batch = 0; batch < 40; batch++) {
    await appendEvents(tenantId, 4, Array.from({ length: 100 }, (_, i) => ({ user: batch * 100 + i, type: 'page', data: { text: `${batch}:${i}:${text}` }, time: 1 })));
  }
  const result = await sqliteCheckpointer()!.now();
  expect(result.log).toBeGreaterThan(0);
  expect(result.checkpointed).toBe(result.log);
  expect(await db().eventLog.count({ where: { tenantId } })).toBe(160);
});
