import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import type { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { runDueTimers } from '../../server/engine/timers';
import { loadShard, loadShards } from '../../server/engine/recovery';
import type { Shard } from '../../server/engine/shard';
import { acquireLease } from '../../server/storage/journal/leases';
import { newId } from '../../server/ids';
import { isDeadLocalOwner, processOwner } from '../../server/process-owner';
import { db, database } from '../helpers/app-db';
import { advance, crowd, range, send, start, startHarness, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A pid that belonged to a process of this host and no longer does. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

/** A shard as plain data: non-empty bitmaps of steps and delay/ttl buckets, and edge counts. */
function shape(shard: Shard) {
  const bitmaps = (map: Map<string | number, RoaringBitmap32>) => Object.fromEntries([...map].filter(([, b]) => b.size > 0).map(([k, b]) => [k, b.toArray()]));
  const buckets = (map: Map<string, Map<number, RoaringBitmap32>>) =>
    Object.fromEntries([...map].map(([step, byEnd]) => [step, bitmaps(byEnd)]).filter(([, b]) => Object.keys(b).length > 0));
  return {
    steps: bitmaps(shard.steps),
    delays: buckets(shard.delays),
    ttls: buckets(shard.ttls),
    edges: Object.fromEntries(shard.edges),
    cronNext: Object.fromEntries(shard.cronNext),
  };
}

describe('recovery', () => {
  it('replaying the whole journal rebuilds exactly the shards the engine holds: repeated, bulk and single moves, delay and ttl buckets', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 });
    const wf = await workflow(h, {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          ttl: '1h',
          branches: [
            { condition: 'event.type == "a"', next: 'mid' },
            { condition: 'event.type == "skip"', next: 'done' },
          ],
        },
        {
          name: 'mid',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "b"', next: 'wait' },
            { condition: 'event.type == "back"', next: 'entry' },
          ],
        },
        { name: 'wait', kind: 'delay', after: '10m', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', range(1, 60));
    const id = await start(h, wf, 'c');
    // Users 1–20 move twice within one batch (entry → mid → wait); 21–30 go back to entry and on again.
    await send(h, [...range(1, 40).map((user) => ({ user, type: 'a' })), ...range(1, 20).map((user) => ({ user, type: 'b' }))]);
    await advance(h, 5 * 60_000);
    await send(h, [
      ...range(21, 30).map((user) => ({ user, type: 'back' })),
      ...range(21, 25).map((user) => ({ user, type: 'a' })),
      ...range(31, 35).map((user) => ({ user, type: 'b' })),
    ]);
    await advance(h, 6 * 60_000); // users 1–20 leave the delay in bulk; 31–35 are still waiting
    const instance = h.engine.findRuntime(id)!;
    expect(instance.counts().steps).toEqual({ entry: 25, mid: 10, wait: 5, done: 20 });

    // Once the partition loops have checkpointed these moves (they do so soon after), no checkpoint is written again;
    // removing them all makes recovery replay the whole journal.
    const lastSeq = (await db().journal.aggregate({ where: { instanceId: id }, _max: { seq: true } }))._max.seq!;
    await expect
      .poll(async () => (await db().shardCheckpoint.findMany({ where: { instanceId: id } })).every((c) => c.journalSeq >= lastSeq), { timeout: 10_000 })
      .toBe(true);
    const [kept] = await db().shardCheckpoint.findMany({ where: { instanceId: id, partition: 0 } });
    await db().shardCheckpoint.deleteMany({ where: { instanceId: id } });
    for (let partition = 0; partition < h.partitions; partition++) {
      const { shard, replayed } = await loadShard(database(), h.tenantId, id, partition, instance.workflow);
      expect(replayed).toBeGreaterThan(0);
      expect(shape(shard)).toEqual(shape(instance.shards[partition]!));
    }

    // Both partitions from one journal pass, partition 0 from its checkpoint: the pass starts at the older (none) and
    // must skip partition 0's rows the checkpoint already holds (replayed twice, its edge counts would double).
    await db().shardCheckpoint.create({ data: kept });
    const together = await loadShards(database(), h.tenantId, id, [0, 1], instance.workflow);
    expect(together.get(0)!.replayed).toBe(0);
    expect(together.get(1)!.replayed).toBeGreaterThan(0);
    for (const partition of [0, 1]) expect(shape(together.get(partition)!.shard)).toEqual(shape(instance.shards[partition]!));
  });
});

describe('timer ticks', () => {
  it('a firing that moved users commits no checkpoint; replay plans the next firing from the journaled move', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 });
    const wf = await workflow(h, {
      steps: [
        { name: 'hold', kind: 'timer', cron: '0 0 * * * *', next: 'wait' },
        {
          name: 'wait',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "go"', next: 'done' },
            { condition: 'event.type == "stop"', next: 'done' },
          ],
        },
        { name: 'done', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', range(1, 10));
    const id = await start(h, wf, 'c');
    const beforeFiring = await db().shardCheckpoint.findMany({ where: { instanceId: id } });
    await advance(h, 3_600_000); // fires at 13:00; next at 14:00
    const fired = await db().journal.findMany({ where: { instanceId: id, fromStep: 'hold' } });
    expect(fired).toHaveLength(2);
    // Bulk moves only: the partitions' checkpoints come due bulkCheckpointEveryMs (10 min of the wall clock) after
    // them, so the checkpoints are still those of before the firing and recovery has to replay it.
    const bySeq = (rows: { partition: number; journalSeq: bigint }[]) => rows.map((c) => [c.partition, c.journalSeq]).sort();
    expect(bySeq(await db().shardCheckpoint.findMany({ where: { instanceId: id } }))).toEqual(bySeq(beforeFiring));

    const instance = h.engine.findRuntime(id)!;
    for (let partition = 0; partition < h.partitions; partition++) {
      const live = shape(instance.shards[partition]!);
      expect(live.cronNext).toEqual({ hold: Date.UTC(2026, 0, 1, 14, 0, 0) });
      expect(shape((await loadShard(database(), h.tenantId, id, partition, instance.workflow)).shard)).toEqual(live);
    }
  });

  it('a firing that moved nobody writes a timer plan, not a checkpoint; recovery applies it before the moves after it', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 });
    const wf = await workflow(h, {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "go"', next: 'tick' }] },
        { name: 'tick', kind: 'timer', cron: '0 * * * * *', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', range(1, 10));
    const id = await start(h, wf, 'c');
    const beforeFiring = await db().shardCheckpoint.findMany({ where: { instanceId: id }, orderBy: { partition: 'asc' } });
    expect(beforeFiring).toHaveLength(2);

    await advance(h, 60_000); // 12:01: nobody is in `tick`; it fires next at 12:02
    const afterFiring = await db().shardCheckpoint.findMany({ where: { instanceId: id }, orderBy: { partition: 'asc' } });
    expect(afterFiring.map((c) => [c.journalSeq, Buffer.from(c.data).toString('hex')])).toEqual(
      beforeFiring.map((c) => [c.journalSeq, Buffer.from(c.data).toString('hex')]),
    );
    const plans = await db().shardTimerPlan.findMany({ where: { instanceId: id }, orderBy: { partition: 'asc' } });
    expect(plans.map((p) => [p.partition, JSON.parse(p.cronNext)])).toEqual([
      [0, { tick: Date.UTC(2026, 0, 1, 12, 2, 0) }],
      [1, { tick: Date.UTC(2026, 0, 1, 12, 2, 0) }],
    ]);

    // User 1 enters `tick` after that firing: it must wait for 12:02, not fire at once for the 12:01 that passed.
    await send(h, [{ user: 1, type: 'go' }]);
    const [entered] = await db().journal.findMany({ where: { instanceId: id, toStep: 'tick' } });
    expect(entered.seq).toBeGreaterThan(plans[0].journalSeq);
    // The partition loop checkpoints after that move, and the checkpoint takes the plan's place.
    const partition = Number(entered.partition);
    await expect
      .poll(
        async () =>
          (await db().shardCheckpoint.findUniqueOrThrow({ where: { tenantId_instanceId_partition: { tenantId: h!.tenantId, instanceId: id, partition } } }))
            .journalSeq,
        {
          timeout: 10_000,
        },
      )
      .toBeGreaterThanOrEqual(entered.seq);
    expect(await db().shardTimerPlan.findUnique({ where: { tenantId_instanceId_partition: { tenantId: h.tenantId, instanceId: id, partition } } })).toBeNull();
    // As if the process had died before that checkpoint: the checkpoints from before the firing and the plans.
    for (const { tenantId, instanceId, partition: p, journalSeq, data } of beforeFiring)
      await db().shardCheckpoint.update({ where: { tenantId_instanceId_partition: { tenantId, instanceId, partition: p } }, data: { journalSeq, data } });
    await db().shardTimerPlan.deleteMany({ where: { instanceId: id } });
    await db().shardTimerPlan.createMany({ data: plans });

    const instance = h.engine.findRuntime(id)!;
    expect(instance.shards[partition]!.cronNext.get('tick')).toBe(Date.UTC(2026, 0, 1, 12, 2, 0));
    for (let p = 0; p < h.partitions; p++)
      expect(shape((await loadShard(database(), h.tenantId, id, p, instance.workflow)).shard)).toEqual(shape(instance.shards[p]!));
  });

  // 64 tenants a transaction (the default: the three commit together), or one (three groups, two of them in flight).
  it.each([
    { tenantsPerCommit: undefined, together: 'together' },
    { tenantsPerCommit: 1, together: 'a group at a time, two in flight' },
  ])("commits many tenants' firings $together, and one tenant's lost lease costs only that tenant's firing", async ({ tenantsPerCommit }) => {
    h = await startHarness({ partitions: 2, userBlock: 1 });
    const definition = {
      steps: [
        { name: 'hold', kind: 'timer' as const, cron: '0 0 * * * *', next: 'done' },
        { name: 'done', kind: 'direct' as const },
      ],
    };
    const tenants: Harness[] = [h];
    for (let i = 0; i < 2; i++) {
      const tenantId = newId('tn');
      await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, ''), partitions: 2, userBlock: 1 } });
      tenants.push({ ...h, tenantId });
    }
    const ids: string[] = [];
    for (const [i, tenant] of tenants.entries()) {
      await crowd(tenant, 'c', range(1, 10 * (i + 1)));
      ids.push(await start(tenant, await workflow(tenant, definition), 'c'));
    }
    // Another process takes the second tenant's partition 1 over; the tick runs for 13:00 directly (the engine's clock
    // stays at 12:00, so its own timer loop stays out of the way).
    const lost = tenants[1].tenantId;
    await db().partitionState.update({ where: { tenantId_partition: { tenantId: lost, partition: 1 } }, data: { epoch: { increment: 1 } } });
    const firing = await Promise.all(tenants.map(async ({ tenantId }) => ({ id: tenantId, workers: await h!.engine.workers(tenantId) })));
    const fireAt = h.clock.now() + 3_600_000;
    await expect(runDueTimers(firing, fireAt, tenantsPerCommit)).rejects.toThrow(/Lease of partition/);

    const movedOf = async (instanceId: string) =>
      (await db().journal.findMany({ where: { instanceId, fromStep: 'hold' } })).reduce((sum, m) => sum + Number(m.count), 0);
    expect(h.engine.findRuntime(ids[0])!.counts().steps).toEqual({ hold: 0, done: 10 });
    expect(h.engine.findRuntime(ids[2])!.counts().steps).toEqual({ hold: 0, done: 30 });
    expect([await movedOf(ids[0]), await movedOf(ids[1]), await movedOf(ids[2])]).toEqual([10, 0, 30]);
    // The tenant that lost its lease rebuilt its shards from the database, and the next tick fires it alone.
    await expect.poll(() => h!.engine.findRuntime(ids[1])?.counts().steps, { timeout: 10_000 }).toEqual({ hold: 20, done: 0 });
    await expect.poll(() => firing[1].workers.every((w) => w.lease !== null), { timeout: 10_000 }).toBe(true);
    await runDueTimers(firing, fireAt, tenantsPerCommit);
    expect(h.engine.findRuntime(ids[1])!.counts().steps).toEqual({ hold: 0, done: 20 });
    expect([await movedOf(ids[0]), await movedOf(ids[1]), await movedOf(ids[2])]).toEqual([10, 20, 30]);
  });

  it('moves every partition in one commit; when the commit fails, memory is rebuilt and the next tick moves each user once', async () => {
    h = await startHarness({ partitions: 3, userBlock: 1 });
    const wf = await workflow(h, {
      steps: [
        { name: 'hold', kind: 'timer', cron: '0 0 * * * *', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', range(1, 30));
    const id = await start(h, wf, 'c');
    // Another process takes partition 1 over: the tick's commit is refused for every partition, not just that one,
    // and all three drop their memory and re-take their lease (epoch + 1). The tick is run for 13:00 directly; the
    // engine's clock stays at 12:00, so its own timer loop stays out of the way.
    await db().partitionState.update({ where: { tenantId_partition: { tenantId: h.tenantId, partition: 1 } }, data: { epoch: { increment: 1 } } });
    const workers = await h.engine.workers(h.tenantId);
    const fireAt = h.clock.now() + 3_600_000;
    await expect(runDueTimers([{ id: h.tenantId, workers }], fireAt)).rejects.toThrow(/Lease of partition/);
    await expect.poll(() => workers.every((w) => w.lease !== null), { timeout: 10_000 }).toBe(true);
    // Each worker re-takes its lease first and rebuilds its shards from checkpoint + journal after: wait for both.
    await expect.poll(() => h!.engine.findRuntime(id)?.counts().steps, { timeout: 10_000 }).toEqual({ hold: 30, done: 0 });
    expect((await db().partitionState.findMany({ where: { tenantId: h.tenantId }, orderBy: { partition: 'asc' } })).map((p) => p.epoch)).toEqual([2, 3, 2]);

    await runDueTimers([{ id: h.tenantId, workers }], fireAt);
    expect(h.engine.findRuntime(id)!.counts().steps).toEqual({ hold: 0, done: 30 });
    const moved = await db().journal.findMany({ where: { instanceId: id, fromStep: 'hold' } });
    expect(moved.map((m) => Number(m.partition)).sort()).toEqual([0, 1, 2]);
    expect(moved.reduce((sum, m) => sum + Number(m.count), 0)).toBe(30);
  });
});

describe('leases left by a process that is gone', () => {
  it('knows a dead process of this host from a live one, another host or another naming scheme', () => {
    expect(isDeadLocalOwner(`${hostname()}:${deadPid()}`)).toBe(true);
    expect(isDeadLocalOwner(processOwner())).toBe(false);
    expect(isDeadLocalOwner(`${hostname()}:${process.ppid}`)).toBe(false);
    expect(isDeadLocalOwner(`another-host.example:${deadPid()}`)).toBe(false);
    expect(isDeadLocalOwner('test-owner')).toBe(false);
    expect(isDeadLocalOwner(null)).toBe(false);
  });

  it('a partition held by a dead local process is taken at once, one held by a live process is not', async () => {
    const tenantId = newId('tn');
    await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 2, userBlock: 1 } });
    const now = Date.now();
    const held = (partition: number, owner: string) =>
      db().partitionState.create({ data: { tenantId, partition, owner, epoch: 3, offset: 7n, leaseUntilMs: BigInt(now + 3_600_000) } });
    await held(0, `${hostname()}:${deadPid()}`);
    await held(1, `${hostname()}:${process.ppid}`);

    const taken = await acquireLease(database(), tenantId, 0, 'new-owner', now, 15_000);
    expect(taken).toEqual({ lease: { tenantId, partition: 0, owner: 'new-owner', epoch: 4 }, offset: 7 });
    expect(await acquireLease(database(), tenantId, 1, 'new-owner', now, 15_000)).toBeNull();
    expect(await db().partitionState.findUnique({ where: { tenantId_partition: { tenantId, partition: 1 } } })).toMatchObject({
      owner: `${hostname()}:${process.ppid}`,
      epoch: 3,
    });
  });
});
