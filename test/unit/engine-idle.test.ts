// Cost follows work: an idle partition issues no database statement, however long it idles; new events wake it at
// once; its lease is kept by one renewal for all partitions; a lease taken over is noticed and given up.
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import type { Database } from '../../server/storage/database';
import type { RawDb } from '../../server/storage/raw';
import { db, database } from '../helpers/app-db';
import { AppError } from '../../server/errors';
import { newId } from '../../server/ids';
import { advance, crowd, restartEngine, send, start, startHarness, steps, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/**
 * The process's database, with every raw statement the engine sends recorded; while `hold` is set, reads of shard
 * checkpoints wait for it (a restart whose state takes long to load).
 */
function recordingDatabase(): { database: Database; statements: string[]; transactions: string[][]; hold?: Promise<void> } {
  const inner = database();
  const statements: string[] = [];
  const transactions: string[][] = [];
  const recorded: { database: Database; statements: string[]; transactions: string[][]; hold?: Promise<void> } = { database: inner, statements, transactions };
  const held = async (sql: string) => {
    if (sql.includes('ShardCheckpoint')) await recorded.hold;
  };
  const record = (raw: RawDb): RawDb => ({
    query: async (sql, params) => (statements.push(sql), await held(sql), raw.query(sql, params)),
    each: async (sql, params, visit) => (statements.push(sql), await held(sql), raw.each(sql, params, visit)),
    execute: (sql, params) => (statements.push(sql), raw.execute(sql, params)),
    transaction: (list) => (statements.push(...list.map((s) => s.sql)), transactions.push(list.map((s) => s.sql)), raw.transaction(list)),
    close: () => raw.close(),
  });
  recorded.database = { db: inner.db, dialect: inner.dialect, local: inner.local, raw: async () => record(await inner.raw()) };
  return recorded;
}

const branch = {
  steps: [
    {
      name: 'wait',
      kind: 'branch' as const,
      branches: [
        { condition: 'event.type == "buy"', next: 'bought' },
        { condition: 'false', next: 'bought' },
      ],
    },
    { name: 'bought', kind: 'direct' as const },
  ],
};

describe('idle partitions', () => {
  it('issue no database statement while idle (only one lease renewal for all of them), and wake at once on events', async () => {
    const wallClock = new ManualClock(Date.now());
    const recorded = recordingDatabase();
    h = await startHarness({ partitions: 8, userBlock: 1 }, undefined, { wallClock, database: recorded.database });
    const wf = await workflow(h, branch);
    await crowd(h, 'c', [1, 2, 3, 4, 5, 6, 7, 8]);
    const id = await start(h, wf, 'c');
    await send(h, [{ user: 3, type: 'buy' }]);
    await wallClock.advance(10_000); // the first moves' checkpoint is due
    // Its write is database I/O the clock does not wait for: the idle minute is counted from when it has committed.
    const move = await db().journal.findFirstOrThrow({ where: { instanceId: id, toStep: 'bought' } });
    await expect
      .poll(
        async () =>
          (
            await db().shardCheckpoint.findUniqueOrThrow({
              where: { tenantId_instanceId_partition: { tenantId: h!.tenantId, instanceId: id, partition: move.partition } },
            })
          ).journalSeq,
      )
      .toBeGreaterThanOrEqual(move.seq);
    recorded.statements.length = 0;

    await wallClock.advance(60_000);
    const logReads = recorded.statements.filter((sql) => sql.includes('EventLog'));
    const others = recorded.statements.filter((sql) => !sql.includes('PartitionState') || !sql.startsWith('UPDATE'));
    expect(logReads).toEqual([]);
    expect(others).toEqual([]);
    // At most a renewal every third of the 15 s lease, each one statement for all 8 partitions (one a partition would be
    // 96); how many ran within the minute depends on how long each round trip kept the keeper from sleeping again.
    expect(recorded.statements.length).toBeLessThanOrEqual(12);

    await send(h, [{ user: 5, type: 'buy' }]);
    expect(await steps(h, id)).toEqual({ wait: 6, bought: 2 });
  });

  it('gives up a lease another process took, and takes the partition back once that lease is released', async () => {
    const wallClock = new ManualClock(Date.now());
    h = await startHarness({ partitions: 2, userBlock: 1 }, undefined, { wallClock });
    const wf = await workflow(h, branch);
    await crowd(h, 'c', [1, 2, 3, 4]);
    const id = await start(h, wf, 'c');
    const worker = (await h.engine.workers(h.tenantId))[0];
    const epoch = worker.lease!.epoch;
    await db().partitionState.update({
      where: { tenantId_partition: { tenantId: h.tenantId, partition: 0 } },
      data: { owner: 'someone-else', epoch: epoch + 1, leaseUntilMs: BigInt(wallClock.now() + 60_000) },
    });
    await wallClock.advance(5_000); // the keeper's renewal finds the lease gone
    await expect.poll(() => worker.lease).toBeNull();
    expect((await steps(h, id)).wait).toBe(2); // partition 1's users only: partition 0 is not held here

    await db().partitionState.update({
      where: { tenantId_partition: { tenantId: h.tenantId, partition: 0 } },
      data: { owner: null, leaseUntilMs: 0n },
    });
    await wallClock.advance(7_500); // the worker tries again after half a lease
    await expect.poll(() => worker.lease?.epoch).toBe(epoch + 2);
    // The lease is taken before the partition's shards are rebuilt from the database.
    await expect.poll(() => steps(h!, id)).toEqual({ wait: 4, bought: 0 });
  });
});

describe('a restart', () => {
  it('answers at once while the tenants load: a live read is a 503 partition_recovering, then the counts', async () => {
    const recorded = recordingDatabase();
    // The tenants are listed a few round trips later than the rest of the start's and the read's queries: a start
    // that returned before its list was read would let the read below wait for the held load instead of answering 503.
    const inner = recorded.database.db;
    const slowly = async (args: never) => {
      for (let trip = 0; trip < 4; trip++) await inner.$queryRawUnsafe('SELECT 1');
      return inner.tenant.findMany(args);
    };
    const tenant = { ...inner.tenant, findMany: slowly as never };
    recorded.database = { ...recorded.database, db: new Proxy(inner, { get: (target, key) => (key === 'tenant' ? tenant : Reflect.get(target, key)) }) };
    h = await startHarness({ partitions: 4, userBlock: 1 }, undefined, { database: recorded.database });
    const wf = await workflow(h, branch);
    await crowd(h, 'c', [1, 2, 3, 4, 5, 6]);
    const id = await start(h, wf, 'c');
    await send(h, [{ user: 2, type: 'buy' }]);

    await h.engine.loaded(); // every tenant of the database (other tests' too) loaded before the restart
    let release!: () => void;
    recorded.hold = new Promise((resolve) => (release = resolve));
    await restartEngine(h, { loaded: false }); // returns while the tenant's checkpoints are still being read
    const refused = await h.engine.getCounts(h.tenantId, id).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'partition_recovering', status: 503, details: { retryAfterSeconds: 1 } });

    release();
    await h.engine.loaded();
    expect(await steps(h, id)).toEqual({ wait: 5, bought: 1 });
  });
});

describe('a timer firing', () => {
  it('commits every due partition of the tenant or none: one between leases makes the firing wait for it', async () => {
    const wallClock = new ManualClock(Date.now());
    h = await startHarness({ partitions: 2, userBlock: 1 }, undefined, { wallClock });
    const wf = await workflow(h, {
      steps: [
        { name: 'wait', kind: 'timer', cron: '0 0 * * * *', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', [1, 2, 3, 4]);
    const id = await start(h, wf, 'c');
    const worker = (await h.engine.workers(h.tenantId))[0];
    const where = { tenantId_partition: { tenantId: h.tenantId, partition: 0 } };
    await db().partitionState.update({ where, data: { owner: 'someone-else', epoch: worker.lease!.epoch + 1 } });
    await wallClock.advance(5_000);
    await expect.poll(() => worker.lease).toBeNull();

    await advance(h, 3_600_000); // the hourly firing is due, partition 0 is not held
    expect(await steps(h, id)).toEqual({ wait: 2, done: 0 }); // partition 1's users stayed too

    await db().partitionState.update({ where, data: { owner: null, leaseUntilMs: 0n } });
    await wallClock.advance(7_500);
    await expect.poll(() => worker.lease).not.toBeNull();
    await h.engine.runTimers();
    expect(await steps(h, id)).toEqual({ wait: 0, done: 4 });
  });

  it('that failed to commit leaves no partition out of the counts: reads say it is being rebuilt, then count it again', async () => {
    const wallClock = new ManualClock(Date.now());
    const recorded = recordingDatabase();
    let failing = false;
    const inner = recorded.database;
    recorded.database = {
      ...inner,
      raw: async () => {
        const raw = await inner.raw();
        return {
          ...raw,
          transaction: async (list) => {
            if (failing && list.some((s) => s.sql.includes('Journal'))) throw new Error('the commit failed');
            return raw.transaction(list);
          },
        };
      },
    };
    h = await startHarness({ partitions: 2, userBlock: 1 }, undefined, { wallClock, database: recorded.database });
    const wf = await workflow(h, {
      steps: [
        { name: 'wait', kind: 'timer', cron: '0 0 * * * *', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', [1, 2, 3, 4]);
    const id = await start(h, wf, 'c');
    expect(await steps(h, id)).toEqual({ wait: 4, done: 0 });

    // The hourly firing fails to commit; the partitions' rebuild waits (its checkpoint reads are held).
    let release!: () => void;
    recorded.hold = new Promise<void>((resolve) => (release = resolve));
    failing = true;
    try {
      await advance(h, 3_600_000).catch(() => undefined);
      const outcome = (read: () => Promise<unknown>) =>
        read().then(
          () => 'answered',
          (error: unknown) => error,
        );
      // Before the fix the counts answered {wait: 0, done: 0}: both partitions' users left out, silently.
      await expect
        .poll(() => outcome(() => h!.engine.getCounts(h!.tenantId, id)))
        .toMatchObject({
          code: 'partition_recovering',
          status: 503,
          details: { retryAfterSeconds: 1, partitions: [0, 1] },
        });
      expect(await outcome(() => h!.engine.stepBitmap(h!.tenantId, id, 'wait'))).toMatchObject({ code: 'partition_recovering' });
      expect(await outcome(() => h!.engine.whereIsUser(h!.tenantId, 3))).toMatchObject({ code: 'partition_recovering' });
    } finally {
      failing = false;
      release();
    }
    // Rebuilt from the database, the firing is due again and commits.
    await expect
      .poll(async () => {
        await h!.engine.runTimers().catch(() => undefined);
        return steps(h!, id).catch((error: unknown) => (error as AppError).code);
      })
      .toEqual({ wait: 0, done: 4 });
  });

  it('of many tenants is one transaction, and so are the checkpoints their partitions are due for after it', async () => {
    const wallClock = new ManualClock(Date.now());
    const recorded = recordingDatabase();
    h = await startHarness({ partitions: 4, userBlock: 1 }, undefined, { wallClock, database: recorded.database });
    const hourly = {
      steps: [
        { name: 'wait', kind: 'timer' as const, cron: '0 0 * * * *', next: 'done' },
        { name: 'done', kind: 'direct' as const },
      ],
    };
    const tenants: Harness[] = [h];
    for (let i = 0; i < 2; i++) {
      const tenantId = newId('tn');
      await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, ''), partitions: 4, userBlock: 1 } });
      tenants.push({ ...h, tenantId });
    }
    const ids: string[] = [];
    for (const tenant of tenants) {
      await crowd(tenant, 'c', [1, 2, 3, 4, 5, 6, 7, 8]);
      ids.push(await start(tenant, await workflow(tenant, hourly), 'c'));
    }
    await wallClock.advance(10_000); // the starts' checkpoints are written
    recorded.transactions.length = 0;

    await advance(h, 3_600_000);
    for (const id of ids) expect(h.engine.findRuntime(id)!.counts().steps).toEqual({ wait: 0, done: 8 });
    const withMoves = recorded.transactions.filter((sql) => sql.some((s) => s.startsWith('INSERT INTO') && s.includes('Journal')));
    expect(withMoves).toHaveLength(1);
    expect(withMoves[0].filter((s) => s.includes('Journal')).length).toBe(1); // 12 bulk moves, one statement

    recorded.transactions.length = 0;
    // Bulk moves only: replaying them costs about what a checkpoint does, so it comes due after the longer interval.
    await wallClock.advance(h.engine.checkpointEveryMs);
    const checkpointStatements = () => recorded.transactions.flat().filter((s) => s.includes('INSERT INTO') && s.includes('ShardCheckpoint'));
    await h.engine.checkpointSchedule.settled();
    expect(checkpointStatements()).toEqual([]);
    await wallClock.advance(h.engine.bulkCheckpointEveryMs - h.engine.checkpointEveryMs);
    // One multi-row statement: a row per partition, each with its journal-seq subquery.
    await expect.poll(() => checkpointStatements().map((s) => s.split('MAX(m."seq")').length - 1)).toEqual([12]);
    expect(recorded.transactions).toHaveLength(1);
    // The 12 shards' conversion rows and timer plans go in one statement each too.
    for (const table of ['"Conversion"', '"ShardTimerPlan"'])
      expect(recorded.transactions[0].filter((s) => s.startsWith('DELETE') && s.includes(table))).toHaveLength(1);
  });
});
