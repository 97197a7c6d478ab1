// Exit criteria (issue 37 §6) through a real engine on the ManualClock: users who meet them leave the journey from the
// step they are in, counted there as exited early, and no later step's move (so none of its actions) is journaled for
// them. Event criteria are checked at once, before the branches; profile and crowd criteria as bitmap plans at a start
// and at each timer firing, never per user. Restart recovery and point-in-time reads rebuild the same exits.
import { afterEach, describe, expect, it } from 'vitest';
import { committedStepUsers } from '../../server/engine/committed';
import { CommittedShards } from '../../server/engine/committed-cache';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { countsAsOf } from '../../server/engine/as-of';
import { EXITED } from '../../server/engine/exit';
import { loadShard } from '../../server/engine/recovery';
import type { Shard } from '../../server/engine/shard';
import { InstanceRuntime } from '../../server/engine/tenant';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { importProfiles } from '../../server/profiles/import';
import { db, database } from '../helpers/app-db';
import type { Tenant } from '../../server/tenants/tenants';
import { advance, crowd, range, restartEngine, send, settle, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const MINUTE = 60_000;

/** Every journaled move of the instance, as [from, to, users]. */
async function journal(instanceId: string): Promise<[string | null, string, number[]][]> {
  const rows = await db().journal.findMany({ where: { instanceId }, orderBy: { seq: 'asc' } });
  return rows.map((row) => [row.fromStep, row.toStep, row.bitmap ? RoaringBitmap32.deserialize(row.bitmap, 'portable').toArray() : [Number(row.user)]]);
}

/** A shard's users by step, exited users by step, and entries. */
const shape = (shard: Shard) => ({
  steps: Object.fromEntries([...shard.steps].filter(([, b]) => b.size > 0).map(([step, b]) => [step, b.toArray()])),
  exited: Object.fromEntries([...shard.exited].map(([step, b]) => [step, b.toArray()])),
  entered: shard.entered,
});

/** The users the journal moved into `step`. */
const movedInto = (moves: [string | null, string, number[]][], step: string) => moves.filter(([, to]) => to === step).flatMap(([, , users]) => users);

function ndjson(profiles: [number, Record<string, unknown>][]): ReadableStream<Uint8Array> {
  const text = profiles.map(([user, attributes]) => JSON.stringify({ user, attributes })).join('\n');
  return new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode(text)), c.close()) });
}

describe('exit criteria', () => {
  it('on events: checked at once from any step, before branches; a goal on the same event counts too; rebuilt after a restart', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 });
    const definition: WorkflowDefinition = {
      steps: [
        { name: 'welcome', kind: 'direct', next: 'wait' },
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'thanks' }], timeout: { after: '30m', next: 'remind' } },
        { name: 'remind', kind: 'delay', after: '1h', next: 'final' },
        { name: 'thanks', kind: 'direct', enterAction: 'tag:thanks' },
        { name: 'final', kind: 'direct', enterAction: 'tag:final' },
      ],
      goal: { condition: 'event.type == "purchase"' },
      exit: { condition: 'event.type == "unsubscribe" || (event.type == "purchase" && event.data.amount >= 100)' },
    };
    await crowd(h, 'c', range(1, 100));
    const id = await start(h, await workflow(h, definition), 'c');

    await send(h, [
      ...range(1, 10).map((user) => ({ user, type: 'unsubscribe' })),
      ...range(11, 15).map((user) => ({ user, type: 'purchase', data: { amount: 500 } })),
      ...range(16, 20).map((user) => ({ user, type: 'purchase', data: { amount: 5 } })),
      // Events after the exit, in the same batch: no conversion, no second exit.
      { user: 1, type: 'purchase', data: { amount: 5 } },
      { user: 2, type: 'unsubscribe' },
    ]);
    let counts = await h.engine.getCounts(h.tenantId, id);
    // The big purchases convert (the goal runs first) AND exit (before the branch, so nobody of them reaches thanks).
    expect(counts).toMatchObject({ converted: 10, convertedFrom: { wait: 10 }, exited: 15, exitedFrom: { welcome: 0, wait: 15, remind: 0 } });
    expect(counts.steps).toMatchObject({ wait: 80, thanks: 5 });
    expect(await stepUsers(h, id, 'thanks')).toEqual(range(16, 20));
    expect((await h.engine.stepBitmap(h.tenantId, id, 'wait', 'exited')).toArray()).toEqual(range(1, 15));
    // A cluster member holding none of the partitions reads them as committed (checkpoint + journal): the same users.
    const running = h.engine.findRuntime(id)!;
    const elsewhere = new InstanceRuntime(running.record, running.workflow, h.partitions);
    expect((await committedStepUsers(elsewhere, 'wait', new CommittedShards(database()), 'exited')).toArray()).toEqual(range(1, 15));

    // Users who finished (an end step) are past the criteria.
    await send(h, [{ user: 16, type: 'unsubscribe' }]);
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ exited: 15, steps: { thanks: 5 } });

    // The timeout moves the rest on; an unsubscribe in the delay step takes its user out from there.
    await advance(h, 31 * MINUTE);
    await send(
      h,
      range(21, 25).map((user) => ({ user, type: 'unsubscribe' })),
    );
    // The journal alone (no checkpoint) rebuilds the same shards: exits replayed like moves.
    const live = h.engine.findRuntime(id)!;
    const lastSeq = (await db().journal.aggregate({ where: { instanceId: id }, _max: { seq: true } }))._max.seq!;
    await expect
      .poll(async () => (await db().shardCheckpoint.findMany({ where: { instanceId: id } })).every((c) => c.journalSeq >= lastSeq), { timeout: 10_000 })
      .toBe(true);
    await db().shardCheckpoint.deleteMany({ where: { instanceId: id } });
    for (let partition = 0; partition < h.partitions; partition++) {
      const { shard, replayed } = await loadShard(database(), h.tenantId, id, partition, live.workflow);
      expect(replayed).toBeGreaterThan(0);
      expect(shape(shard)).toEqual(shape(live.shards[partition]!));
    }
    await restartEngine(h);
    counts = await h.engine.getCounts(h.tenantId, id);
    expect(counts).toMatchObject({ exited: 20, exitedFrom: { wait: 15, remind: 5 }, steps: { remind: 75 } });
    expect((await h.engine.stepBitmap(h.tenantId, id, 'remind', 'exited')).toArray()).toEqual(range(21, 25));

    await advance(h, 61 * MINUTE);
    expect(await stepUsers(h, id, 'final')).toEqual(range(26, 100));
    const moves = await journal(id);
    // An exit is a move to $exit with no action tags; nobody who exited moved anywhere after it.
    expect(movedInto(moves, EXITED).sort((a, b) => a - b)).toEqual([...range(1, 15), ...range(21, 25)]);
    const exitRows = await db().journal.findMany({ where: { instanceId: id, toStep: EXITED } });
    expect(exitRows.every((row) => row.enterAction === null && row.leaveAction === null)).toBe(true);
    expect(movedInto(moves, 'final').filter((user) => user <= 25)).toEqual([]);
    expect(movedInto(moves, 'remind').filter((user) => user <= 20)).toEqual([]);
  });

  it('on profiles and crowds: bitmap plans at the start and at each timer firing, never per user; restart and asOf agree', async () => {
    h = await startHarness({ partitions: 4, userBlock: 1 });
    const definition: WorkflowDefinition = {
      steps: [
        { name: 'wait', kind: 'delay', after: '1h', next: 'pitch' },
        { name: 'pitch', kind: 'timer', cron: '0 0 * * * *', enterAction: 'tag:pitch', next: 'done' },
        { name: 'done', kind: 'direct', enterAction: 'tag:done' },
      ],
      exit: { condition: 'inCrowd("churned") || profile.plan == "cancelled"' },
    };
    const users = range(1, 200);
    await importProfiles(database(), h.tenantId, ndjson(users.map((u) => [u, { plan: u % 10 === 0 ? 'cancelled' : 'pro' }])), 'ndjson');
    await crowd(h, 'churned', []);
    await crowd(h, 'c', users);
    const id = await start(h, await workflow(h, definition), 'c');
    // A plan decides: a per-user evaluation of the criteria would call the compiled predicate.
    const instance = (await h.engine.tenant(h.tenantId)).instances.get(id)!;
    const exit = instance.workflow.exit!;
    expect(exit.bulk).toBe(true);
    let perUser = 0;
    const counted = { ...exit.condition, predicate: (...args: Parameters<typeof exit.condition.predicate>) => (perUser++, exit.condition.predicate(...args)) };
    Object.assign(instance.workflow, { exit: { ...exit, condition: counted } });

    // Cancelled users met the criteria as they entered: counted as entered, and as exited at the entry step.
    const cancelled = users.filter((u) => u % 10 === 0);
    let counts = await h.engine.getCounts(h.tenantId, id);
    expect(counts).toMatchObject({ entered: 200, exited: 20, exitedFrom: { wait: 20, pitch: 0, done: 0 }, steps: { wait: 180 } });

    // Users who join the churned crowd leave at the delay's firing, before it moves the rest on.
    await crowd(h, 'churned', range(1, 5));
    await advance(h, 61 * MINUTE);
    const afterDelay = h.clock.now();
    counts = await h.engine.getCounts(h.tenantId, id);
    expect(counts).toMatchObject({ exited: 25, exitedFrom: { wait: 25 }, steps: { wait: 0, pitch: 175 } });
    expect((await h.engine.stepBitmap(h.tenantId, id, 'wait', 'exited')).toArray()).toEqual([...range(1, 5), ...cancelled]);

    // A profile that changes takes its user out at the next timer firing, from the step they wait in.
    await importProfiles(database(), h.tenantId, ndjson(range(11, 13).map((u) => [u, { plan: 'cancelled' }])), 'ndjson');
    await advance(h, 60 * MINUTE);
    counts = await h.engine.getCounts(h.tenantId, id);
    expect(counts).toMatchObject({ exited: 28, exitedFrom: { wait: 25, pitch: 3 }, steps: { pitch: 0, done: 172 } });
    expect((await h.engine.stepBitmap(h.tenantId, id, 'pitch', 'exited')).toArray()).toEqual(range(11, 13));
    const moves = await journal(id);
    expect(movedInto(moves, 'pitch').filter((u) => u <= 5 || u % 10 === 0)).toEqual([]);
    expect(movedInto(moves, 'done').filter((u) => (u >= 11 && u <= 13) || u <= 5)).toEqual([]);
    expect(perUser).toBe(0);
    // Users who finished (done, an end step) are past the criteria at later firings.
    await importProfiles(database(), h.tenantId, ndjson([[14, { plan: 'cancelled' }]]), 'ndjson');
    await advance(h, 60 * MINUTE);
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ exited: 28, steps: { done: 172 } });

    // Rebuilt from checkpoints and the journal, and replayed to a past moment: the same exits.
    await restartEngine(h);
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ exited: 28, exitedFrom: { wait: 25, pitch: 3 } });
    expect((await h.engine.stepBitmap(h.tenantId, id, 'pitch', 'exited')).toArray()).toEqual(range(11, 13));
    const tenant = (await db().tenant.findUniqueOrThrow({ where: { id: h.tenantId } })) as Tenant;
    expect(await countsAsOf(database(), tenant, id, afterDelay, h.clock.now())).toMatchObject({
      exited: 25,
      exitedFrom: { wait: 25, pitch: 0 },
      steps: { pitch: 175 },
    });

    // A crowd update lets new users in, not those who exited; they stay out of a new instance that excludes the old one's users.
    await crowd(h, 'c', [...users, 300, 301]);
    await settle(h, h.engine.updateInstanceCrowd(h.tenantId, id, { crowd: 'c' }));
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ exited: 28, steps: { wait: 2 } });
    await settle(h, h.engine.stopInstance(h.tenantId, id));
    expect((await h.engine.stepBitmap(h.tenantId, id, 'pitch', 'exited')).toArray()).toEqual(range(11, 13));
    await crowd(h, 'c', [...range(1, 5), 400]);
    const next = await start(h, instance.record.workflowId, 'c');
    expect((await h.engine.getCounts(h.tenantId, next)).entered).toBe(1);
  });

  it('an exited user does not enter the same instance again, even with reentry "again"', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 });
    const id = await settle(
      h,
      h.engine.startInstance(
        h.tenantId,
        await workflow(h, {
          steps: [
            { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "open"', next: 'done' }] },
            { name: 'done', kind: 'direct' },
          ],
          entry: { event: 'signup', reentry: 'again' },
          exit: { condition: 'event.type == "unsubscribe"' },
        }),
        {},
      ),
    );
    await send(h, [
      { user: 1, type: 'signup' },
      { user: 2, type: 'signup' },
    ]);
    await send(h, [
      { user: 1, type: 'unsubscribe' },
      { user: 2, type: 'open' },
    ]);
    await send(h, [
      { user: 1, type: 'signup' },
      { user: 2, type: 'signup' },
    ]);
    // User 2 finished (an exit step) and came back; user 1 left by the exit criteria and stays out.
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ entered: 3, exited: 1, exitedFrom: { wait: 1 }, steps: { wait: 1, done: 0 } });
    expect(await stepUsers(h, id, 'wait')).toEqual([2]);
  });
});
