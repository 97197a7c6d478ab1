import { afterEach, expect, it } from 'vitest';
import { encodeEvents } from '../../server/engine/log-codec';
import { appliedOffsets, LogTrimmer, trimLog } from '../../server/storage/event-log';
import { newId } from '../../server/ids';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { db, database } from '../helpers/app-db';
import { crowd, range, restartEngine, send, start, startHarness, steps, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness;
afterEach(async () => {
  await h.close();
});

const buyOrQuit: WorkflowDefinition = {
  steps: [
    {
      name: 'entry',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "buy"', next: 'done' },
        { condition: 'event.type == "quit"', next: 'gone' },
      ],
    },
    { name: 'done', kind: 'direct' },
    { name: 'gone', kind: 'direct' },
  ],
};

const offsets = async (tenantId: string) =>
  (await db().eventLog.findMany({ where: { tenantId }, orderBy: [{ partition: 'asc' }, { offset: 'asc' }] })).map((r) => `${r.partition}:${r.offset}`);

it('trims applied log rows but the newest of each partition, and the log goes on numbering and applying after it', async () => {
  h = await startHarness({ partitions: 2, userBlock: 1 });
  const wf = await workflow(h, buyOrQuit);
  await crowd(h, 'c', range(1, 20));
  const id = await start(h, wf, 'c');
  for (const users of [
    [1, 2],
    [3, 4],
    [5, 6],
  ])
    await send(
      h,
      users.map((user) => ({ user, type: 'buy' })),
    );
  expect(await offsets(h.tenantId)).toEqual(['0:1', '0:2', '0:3', '1:1', '1:2', '1:3']);

  expect(await trimLog(database(), h.tenantId, await appliedOffsets(database(), h.tenantId))).toBe(4);
  expect(await offsets(h.tenantId)).toEqual(['0:3', '1:3']);

  await send(h, [
    { user: 7, type: 'buy' },
    { user: 8, type: 'quit' },
  ]);
  expect(await offsets(h.tenantId)).toEqual(['0:3', '0:4', '1:3', '1:4']);
  expect(await steps(h, id)).toEqual({ entry: 12, done: 7, gone: 1 });
  await restartEngine(h);
  expect(await steps(h, id)).toEqual({ entry: 12, done: 7, gone: 1 });
  const moves = await db().journal.count({ where: { instanceId: id, fromStep: 'entry' } });
  expect(moves).toBe(8);
});

it('keeps rows a partition has not applied yet, and partitions nobody has taken yet', async () => {
  h = await startHarness({ partitions: 1, userBlock: 1 });
  // A tenant no engine has loaded: its rows and offsets stay exactly as written here.
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 2, userBlock: 1 } });
  await db().partitionState.create({ data: { tenantId, partition: 0, offset: 1n } });
  for (const partition of [0, 1]) {
    for (const offset of [1, 2, 3]) await db().eventLog.create({ data: { tenantId, partition, offset: BigInt(offset), events: encodeEvents([]), count: 0 } });
  }
  // Asked up to offset 3 everywhere, it still keeps what is not applied, and partition 1 has no committed offset.
  expect(
    await trimLog(
      database(),
      tenantId,
      new Map([
        [0, 3],
        [1, 3],
      ]),
    ),
  ).toBe(1);
  expect(await offsets(tenantId)).toEqual(['0:2', '0:3', '1:1', '1:2', '1:3']);
});

it('trims what was applied by the previous run, not what was applied since, and nothing on a first run', async () => {
  h = await startHarness({ partitions: 2, userBlock: 1 });
  const wf = await workflow(h, buyOrQuit);
  await crowd(h, 'c', range(1, 12));
  await start(h, wf, 'c');
  for (const users of [
    [1, 2],
    [3, 4],
    [5, 6],
  ])
    await send(
      h,
      users.map((user) => ({ user, type: 'buy' })),
    );
  const trimmer = new LogTrimmer(database());
  expect(await trimmer.run(h.tenantId)).toBe(0); // a first run only marks offset 3
  for (const users of [
    [7, 8],
    [9, 10],
  ])
    await send(
      h,
      users.map((user) => ({ user, type: 'buy' })),
    );
  expect(await trimmer.run(h.tenantId)).toBe(6); // up to 3, though 5 is applied by now
  expect(await offsets(h.tenantId)).toEqual(['0:4', '0:5', '1:4', '1:5']);
});
