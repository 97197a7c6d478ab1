import { afterEach, describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { loadShard } from '../../server/engine/recovery';
import { Shard } from '../../server/engine/shard';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { validateWorkflow } from '../../core/model/validate';
import { db, database } from '../helpers/app-db';
import { advance, crowd, range, send, settle, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const DAY = 86_400_000;

/** "Did they purchase within 2 days of going? If not, send a reminder." */
const purchaseOrRemind: WorkflowDefinition = {
  steps: [
    {
      name: 'entry',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "go"', next: 'wait' },
        { condition: 'false', next: 'wait' },
      ],
    },
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }], timeout: { after: '2d', next: 'reminder' } },
    { name: 'bought', kind: 'direct' },
    { name: 'reminder', kind: 'direct', enterAction: 'send-reminder' },
  ],
};

async function timeoutMoves(instanceId: string) {
  const rows = await db().journal.findMany({ where: { instanceId, fromStep: 'wait', toStep: 'reminder' }, orderBy: { seq: 'asc' } });
  return rows.map((r) => ({
    user: r.user === null ? null : Number(r.user),
    users: r.bitmap ? RoaringBitmap32.deserialize(r.bitmap, 'portable').toArray() : null,
    enter: r.enterAction,
  }));
}

describe('branch step timeout (wait for an event)', () => {
  it('validates: one branch is enough with a timeout; its duration must parse and its next must exist', () => {
    expect(validateWorkflow(purchaseOrRemind).ok).toBe(true);
    const wait = (timeout: unknown, branches: unknown[] = [{ condition: 'true', next: 'end' }]) =>
      validateWorkflow({
        steps: [
          { name: 'wait', kind: 'branch', branches, timeout },
          { name: 'end', kind: 'direct' },
        ],
      });
    const problems = (result: ReturnType<typeof validateWorkflow>) => (result.ok ? [] : result.problems.map((p) => `${p.code}: ${p.message}`));
    expect(problems(wait({ after: 'soon', next: 'end' }))).toEqual([
      'bad_duration: Step "wait" timeout.after "soon" is not a duration; write e.g. 30s, 5m, 2h, 7d or 1h30m',
    ]);
    expect(problems(wait({ after: '0d', next: 'end' }))).toEqual(['bad_duration: Step "wait" timeout.after "0d" is zero; a duration must be longer than 0']);
    expect(problems(wait({ after: '2d', next: 'nowhere' }))).toEqual([
      'unknown_next: Step "wait" timeout.next points at "nowhere", which is not a step of this workflow',
    ]);
    expect(problems(wait({ after: '2d', next: 'end' }, []))).toEqual([
      'too_few_branches: Step "wait" has no branches; a branch step needs at least 1 (an event no condition matches leaves the user in the step)',
    ]);
  });

  it('users with no matching event within `after` of entering move on as one bulk move per partition and bucket', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 });
    await crowd(h, 'c', range(1, 10));
    const id = await start(h, await workflow(h, purchaseOrRemind), 'c');
    const t0 = h.clock.now();
    await send(
      h,
      range(1, 6).map((user) => ({ user, type: 'go' })),
    ); // 1–6 enter `wait` at t0
    await advance(h, DAY);
    await send(h, [
      { user: 1, type: 'purchase' },
      { user: 2, type: 'view' },
      { user: 7, type: 'go' },
    ]); // 1 buys; 2's event matches nothing; 7 enters at t0 + 1d
    // Entries are kept in 1-minute buckets for a 2-day wait: users move at most one bucket late, never early.
    await advance(h, t0 + 2 * DAY - 1 - h.clock.now());
    expect(await stepUsers(h, id, 'wait')).toEqual([2, 3, 4, 5, 6, 7]);
    await advance(h, 60_000 + 1);
    expect(await stepUsers(h, id, 'reminder')).toEqual([2, 3, 4, 5, 6]);
    expect(await stepUsers(h, id, 'bought')).toEqual([1]);
    expect(await stepUsers(h, id, 'wait')).toEqual([7]);
    const moves = await timeoutMoves(id);
    expect(moves.every((m) => m.user === null && m.enter === 'send-reminder')).toBe(true); // bitmap moves, never per user
    expect(moves.flatMap((m) => m.users!).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6]);
    expect(moves.length).toBeLessThanOrEqual(h.partitions);
    await send(h, [{ user: 2, type: 'purchase' }]); // too late: 2 is no longer waiting
    expect(await stepUsers(h, id, 'bought')).toEqual([1]);
    await advance(h, DAY);
    expect(await stepUsers(h, id, 'reminder')).toEqual([2, 3, 4, 5, 6, 7]);
  });

  it('users timing out of a step with a ttl leave its ttl buckets too; later entries keep their own buckets', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 });
    const definition: WorkflowDefinition = {
      steps: [
        { name: 'wait', kind: 'branch', ttl: '1d', branches: [{ condition: 'profile.tier == "gold"', next: 'gold' }], timeout: { after: '3h', next: 'late' } },
        { name: 'gold', kind: 'direct' },
        { name: 'late', kind: 'direct' },
      ],
    };
    await crowd(h, 'c', range(1, 8));
    const id = await start(h, await workflow(h, definition), 'c');
    await advance(h, 2 * 3_600_000);
    await crowd(h, 'more', range(1, 12));
    await settle(h, h.engine.updateInstanceCrowd(h.tenantId, id, { crowd: 'more' })); // 9–12 enter two hours later
    const instance = h.engine.findRuntime(id)!;
    const bucketed = (map: 'delays' | 'ttls') =>
      instance.shards.flatMap((shard) => [...(shard![map].get('wait')?.values() ?? [])].flatMap((b) => b.toArray())).sort((a, b) => a - b);
    expect(bucketed('ttls')).toEqual(range(1, 12));
    await advance(h, 3_600_000 + 2 * 60_000);
    expect(await stepUsers(h, id, 'late')).toEqual(range(1, 8));
    expect(await stepUsers(h, id, 'wait')).toEqual(range(9, 12));
    expect(bucketed('delays')).toEqual(range(9, 12));
    expect(bucketed('ttls')).toEqual(range(9, 12));
    await advance(h, 2 * 3_600_000);
    expect(await stepUsers(h, id, 'late')).toEqual(range(1, 12));
    expect(bucketed('ttls')).toEqual([]);
  });

  it('a branch step used as the entry step times out from the instance start; its buckets survive journal replay', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 });
    const definition: WorkflowDefinition = { steps: purchaseOrRemind.steps.slice(1) };
    await crowd(h, 'c', range(1, 40));
    const id = await start(h, await workflow(h, definition), 'c');
    await advance(h, 3_600_000);
    await send(
      h,
      range(1, 10).map((user) => ({ user, type: 'purchase' })),
    );
    const instance = h.engine.findRuntime(id)!;

    // Recovery from the journal alone (no checkpoint) rebuilds the timeout buckets the live shards hold.
    const lastSeq = (await db().journal.aggregate({ where: { instanceId: id }, _max: { seq: true } }))._max.seq!;
    await expect
      .poll(async () => (await db().shardCheckpoint.findMany({ where: { instanceId: id } })).every((c) => c.journalSeq >= lastSeq), { timeout: 10_000 })
      .toBe(true);
    await db().shardCheckpoint.deleteMany({ where: { instanceId: id } });
    for (let partition = 0; partition < h.partitions; partition++) {
      const live = instance.shards[partition]!.delays.get('wait')!;
      const { shard, replayed } = await loadShard(database(), h.tenantId, id, partition, instance.workflow);
      expect(replayed).toBeGreaterThan(0);
      const waiting = (buckets: Map<number, RoaringBitmap32>) => [...buckets].filter(([, b]) => b.size > 0).map(([end, b]) => [end, b.toArray()]);
      expect(waiting(shard.delays.get('wait')!)).toEqual(waiting(live));
      expect(waiting(live).length).toBe(1);
    }
    // …and a checkpoint carries them too.
    const copy = Shard.decode(id, 0, instance.shards[0]!.encode());
    expect(copy.delays.get('wait')!.size).toBe(1);

    await advance(h, 2 * DAY);
    expect(await stepUsers(h, id, 'reminder')).toEqual(range(11, 40));
    expect(await stepUsers(h, id, 'bought')).toEqual(range(1, 10));
  });
});
