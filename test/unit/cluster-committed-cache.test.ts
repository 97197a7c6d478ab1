import { afterEach, describe, expect, it } from 'vitest';
import { CommittedShards, ENTRY_BYTES_AT_LEAST } from '../../server/engine/committed-cache';
import { systemClock } from '../../server/clock';
import type { InstanceRuntime } from '../../server/engine/tenant';
import type { Shard } from '../../server/engine/shard';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { crowd, range, send, start, startHarness, workflow, type Harness } from '../fixtures/engine/harness';
import { database } from '../helpers/app-db';

// A cluster member reads partitions other members hold (exports, where-is-user) as committed: rebuilt once from
// checkpoint + journal, then caught up with only the rows committed since. The harness engine holds every partition
// and is the reference: the kept shard must equal its shard after every change.

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const definition: WorkflowDefinition = {
  steps: [
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }] },
    { name: 'bought', kind: 'direct' },
  ],
};

const view = (shard: Shard) => ({
  steps: Object.fromEntries([...shard.steps].map(([step, users]) => [step, users.toArray()])),
  edges: Object.fromEntries(shard.edges),
  entered: shard.entered,
});

describe('shards of partitions held elsewhere, kept for reads', () => {
  it('rebuilds a shard once, then replays only what was committed since, equal to the owner at every step', async () => {
    h = await startHarness(2);
    await crowd(h, 'c', range(1, 40));
    const id = await start(h, await workflow(h, definition), 'c');
    const instance = h.engine.findRuntime(id)!;
    const kept = new CommittedShards(database());

    expect(view(await kept.shard(instance, 0))).toEqual(view(instance.shards[0]!));
    await send(
      h,
      [2, 4, 6].map((user) => ({ user, type: 'purchase' })),
    );
    expect(view(await kept.shard(instance, 0))).toEqual(view(instance.shards[0]!));
    expect(view(await kept.shard(instance, 0)).steps.bought).toEqual([2, 4, 6]);
    await send(
      h,
      [8, 9].map((user) => ({ user, type: 'purchase' })),
    );
    expect(view(await kept.shard(instance, 0))).toEqual(view(instance.shards[0]!));
    expect(view(await kept.shard(instance, 1))).toEqual(view(instance.shards[1]!));
    expect(kept.stats).toMatchObject({ rebuilds: 2, catchUps: 3 });

    // Reads of one shard at once share one catch-up (and see the same object).
    const [a, b] = await Promise.all([kept.shard(instance, 0), kept.shard(instance, 0)]);
    expect(a).toBe(b);
    expect(kept.stats.catchUps).toBe(4);
  });

  it('runs at most the configured number of rebuilds at once and keeps within its memory bound', async () => {
    h = await startHarness(4);
    await crowd(h, 'c', range(1, 400));
    const id = await start(h, await workflow(h, definition), 'c');
    const instance = h.engine.findRuntime(id)!;

    const one = new CommittedShards(database(), systemClock, Number.POSITIVE_INFINITY, 1);
    const shards = await Promise.all([0, 1, 2, 3].map((p) => one.shard(instance, p)));
    shards.forEach((shard, p) => expect(view(shard)).toEqual(view(instance.shards[p]!)));
    expect(one.stats).toMatchObject({ rebuilds: 4, peakRebuilds: 1 });
    expect(one.size().shards).toBe(4);

    const small = new CommittedShards(database(), systemClock, 1, 4);
    for (const p of [0, 1, 2, 3]) await small.shard(instance, p);
    expect(small.size().shards).toBe(1); // the least recently used went; the last read stays
    await small.shard(instance, 3);
    expect(small.stats).toMatchObject({ rebuilds: 4, catchUps: 1 });
  });

  it('bounds empty shards too, and lets a shard of an older workflow version go once a newer one is read', async () => {
    h = await startHarness(4);
    await crowd(h, 'c', [4, 8]); // partition 0 only: partitions 1, 2 and 3 are empty
    const id = await start(h, await workflow(h, definition), 'c');
    const instance = h.engine.findRuntime(id)!;

    const kept = new CommittedShards(database(), systemClock, 2 * ENTRY_BYTES_AT_LEAST);
    for (const p of [1, 2, 3]) await kept.shard(instance, p);
    expect(kept.size()).toEqual({ shards: 2, bytes: 2 * ENTRY_BYTES_AT_LEAST });

    // The same instance after a workflow update (a new version of its record): the older version's shard goes.
    const updated = Object.assign(Object.create(instance) as InstanceRuntime, { record: { ...instance.record, version: instance.record.version + 1 } });
    const roomy = new CommittedShards(database());
    await roomy.shard(instance, 0);
    expect(view(await roomy.shard(updated, 0))).toEqual(view(instance.shards[0]!));
    expect(roomy.size().shards).toBe(1);
    expect(roomy.stats).toMatchObject({ rebuilds: 2 });
  });

  it('rebuilds a kept shard after a crowd update, whose joiners and leavers only its checkpoints carry', async () => {
    h = await startHarness(1);
    await crowd(h, 'c', range(1, 40));
    const id = await start(h, await workflow(h, definition), 'c');
    const instance = h.engine.findRuntime(id)!;
    const kept = new CommittedShards(database());
    await send(h, [{ user: 2, type: 'purchase' }]);
    expect(view(await kept.shard(instance, 0)).steps.bought).toEqual([2]);

    await crowd(h, 'c', [...range(2, 30), 50, 51]); // 1 and 31..40 leave (2 in `bought` stays), 50 and 51 join
    await h.engine.materializeUpdateCrowd(h.tenantId, id, 'c');
    const shard = view(await kept.shard(instance, 0));
    expect(shard).toEqual(view(instance.shards[0]!));
    expect(shard.steps.wait).toEqual([...range(3, 30), 50, 51]);
    expect(kept.stats).toMatchObject({ rebuilds: 2, catchUps: 0 });

    // Journal rows after the rebuild are caught up again, without another rebuild.
    await send(h, [{ user: 50, type: 'purchase' }]);
    expect(view(await kept.shard(instance, 0))).toEqual(view(instance.shards[0]!));
    expect(view(await kept.shard(instance, 0)).steps.bought).toEqual([2, 50]);
    expect(kept.stats).toMatchObject({ rebuilds: 2, catchUps: 2 });
  });
});
