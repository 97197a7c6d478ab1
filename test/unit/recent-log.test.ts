import { expect, it } from 'vitest';
import { appendEvents } from '../../server/engine/ingest';
import { encodeEvents } from '../../server/engine/log-codec';
import { app } from '../../server/app';
import { readLog } from '../../server/engine/log';
import { newId } from '../../server/ids';
import { db, database } from '../helpers/app-db';

const event = (user: number) => ({ user, type: 'visit', data: { n: user }, time: 1_000 });

it('hands rows this process appended to the partition loop from memory, and reads rows other writers appended from the log', async () => {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 1, userBlock: 1 } });
  await appendEvents(database(), app().state, tenantId, [event(1), event(2)]);
  // Another process appends offset 2: this process never saw it.
  await db().eventLog.create({ data: { tenantId, partition: 0, offset: 2n, events: encodeEvents([event(3)]), count: 1 } });
  await appendEvents(database(), app().state, tenantId, [event(4)]);

  const first = await readLog(database(), app().state.recentLog, tenantId, 0, 0, 10);
  expect(first).toEqual([{ offset: 1, events: [event(1), event(2)] }]); // memory stops at the gap
  const rest = await readLog(database(), app().state.recentLog, tenantId, 0, 1, 10);
  expect(rest).toEqual([
    { offset: 2, events: [event(3)] },
    { offset: 3, events: [event(4)] },
  ]);
  // What was read from the log is no longer held in memory either.
  expect(app().state.recentLog.take(tenantId, 0, 0, 10)).toEqual([]);
  expect(await readLog(database(), app().state.recentLog, tenantId, 0, 3, 10)).toEqual([]);
});

it('a row is read the same from memory as from the log, so a loop that re-reads after a failed commit sees the same events', async () => {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 2, userBlock: 1 } });
  await appendEvents(database(), app().state, tenantId, [event(1), event(2), event(3)]);
  const fromMemory = await readLog(database(), app().state.recentLog, tenantId, 1, 0, 10);
  const fromLog = await readLog(database(), app().state.recentLog, tenantId, 1, 0, 10);
  expect(fromMemory).toEqual([{ offset: 1, events: [event(1), event(3)] }]);
  expect(fromLog).toEqual(fromMemory);
});

it('batches written together in one group commit are handed over under the offsets the log gave them', async () => {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 3, userBlock: 1 } });
  // Sent at once, they queue behind the first transaction and the rest go in one group: several rows per partition.
  await Promise.all(
    Array.from({ length: 12 }, (_, batch) =>
      appendEvents(
        database(),
        app().state,
        tenantId,
        [0, 1, 2, 3].map((i) => event(batch * 100 + i)),
      ),
    ),
  );
  for (const partition of [0, 1, 2]) {
    const fromMemory = app().state.recentLog.take(tenantId, partition, 0, 100);
    const fromLog = await readLog(database(), app().state.recentLog, tenantId, partition, 0, 100); // memory is empty now: this reads the table
    expect(fromMemory.length).toBe(12);
    expect(fromLog).toEqual(fromMemory);
  }
});
