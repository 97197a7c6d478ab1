import { afterEach, describe, expect, it } from 'vitest';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { saveCrowd } from '../../server/crowd';
import { partitionOf, USER_BLOCK } from '../../server/engine/partitioning';
import { db, database } from '../helpers/app-db';
import { advance, send, start, startHarness, stepUsers, steps, workflow, type Harness } from '../fixtures/engine/harness';

// Issue 39 §2: a new tenant deals its users to partitions in blocks of USER_BLOCK ids, so a partition's share of a dense
// crowd is runs and the bitmaps the engine journals and checkpoints are a few bytes per block run, not 8 KB per
// 65,536 ids. Users land where ingest looks for them, and move exactly.

const USERS = 400_000;
const journey: WorkflowDefinition = {
  steps: [
    { name: 'wait', kind: 'timer', cron: '0 0 * * * *', next: 'later' },
    { name: 'later', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'bought' }] },
    { name: 'bought', kind: 'direct' },
  ],
};

let h: Harness;
afterEach(() => h?.close());

/** Bytes of journal bitmaps and of checkpoints the instance has written. */
async function written(instanceId: string): Promise<{ journal: number; checkpoints: number }> {
  const journal = await db().journal.findMany({ where: { instanceId }, select: { bitmap: true } });
  const checkpoints = await db().shardCheckpoint.findMany({ where: { instanceId }, select: { data: true } });
  return {
    journal: journal.reduce((sum, row) => sum + (row.bitmap?.byteLength ?? 0), 0),
    checkpoints: checkpoints.reduce((sum, row) => sum + row.data.byteLength, 0),
  };
}

async function run(userBlock: number) {
  h = await startHarness({ partitions: 8, userBlock });
  await saveCrowd(database(), h.tenantId, 'everyone', RoaringBitmap32.fromRange(0, USERS), 'replace');
  const instanceId = await start(h, await workflow(h, journey), 'everyone');
  await advance(h, 60 * 60 * 1000); // the timer moves everyone, one bulk move per partition
  return { instanceId, ...(await written(instanceId)) };
}

describe('users dealt to partitions in blocks of ids', () => {
  it('journals and checkpoints a dense crowd as runs: ~100× fewer bytes than every eighth id', async () => {
    const blocks = await run(USER_BLOCK);
    expect(await steps(h, blocks.instanceId)).toEqual({ wait: 0, later: USERS, bought: 0 });
    await h.close();
    const everyEighth = await run(1); // a tenant made before blocks: user % 8
    expect(await steps(h, everyEighth.instanceId)).toEqual({ wait: 0, later: USERS, bought: 0 });
    // 400,000 users: entry and timer move, 8 partitions each. Every eighth id is 8 KB per 65,536 ids and partition.
    expect(everyEighth.journal).toBeGreaterThan(800_000);
    expect(blocks.journal).toBeLessThan(everyEighth.journal / 50);
    expect(blocks.checkpoints).toBeLessThan(Math.max(everyEighth.checkpoints / 50, 20_000));
  });

  it('an event finds its user in the partition that holds it, at both ends of a block and across the crowd', async () => {
    h = await startHarness({ partitions: 8, userBlock: USER_BLOCK });
    await saveCrowd(database(), h.tenantId, 'everyone', RoaringBitmap32.fromRange(0, USERS), 'replace');
    const instanceId = await start(h, await workflow(h, journey), 'everyone');
    await advance(h, 60 * 60 * 1000);
    const buyers = [0, USER_BLOCK - 1, USER_BLOCK, 7 * USER_BLOCK + 5, 8 * USER_BLOCK, USERS - 1];
    expect(new Set(buyers.map((user) => partitionOf(user, { partitions: 8, userBlock: USER_BLOCK })))).toEqual(new Set([0, 1, 2, 7]));
    await send(
      h,
      buyers.map((user) => ({ user, type: 'buy' })),
    );
    expect(await stepUsers(h, instanceId, 'bought')).toEqual(buyers);
    expect(await steps(h, instanceId)).toEqual({ wait: 0, later: USERS - buyers.length, bought: buyers.length });
  });
});
