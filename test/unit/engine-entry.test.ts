import { afterEach, describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { loadShard } from '../../server/engine/recovery';
import { Shard } from '../../server/engine/shard';
import { validateWorkflow } from '../../core/model/validate';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { db, database } from '../helpers/app-db';
import { crowd, send, settle, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** "When they sign up, wait a week for a purchase." */
const steps: WorkflowDefinition['steps'] = [
  { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }], timeout: { after: '7d', next: 'lapsed' } },
  { name: 'bought', kind: 'direct' },
  { name: 'lapsed', kind: 'direct' },
];

const problems = (definition: unknown) => {
  const result = validateWorkflow(definition, { now: 0 });
  return result.ok ? [] : result.problems.map((p) => `${p.step}/${p.code}: ${p.message}`);
};

async function counts(h: Harness, id: string) {
  return h.engine.getCounts(h.tenantId, id);
}

async function entryRows(id: string) {
  return db().journal.findMany({ where: { instanceId: id, toStep: 'wait' }, orderBy: { seq: 'asc' } });
}

describe('event-triggered entry', () => {
  it('validates the trigger: its condition, reentry policy, crowd name and fields', () => {
    expect(problems({ steps, entry: { event: 'signup' } })).toEqual([]);
    expect(problems({ steps, entry: { event: 'signup', condition: 'event.data.plan == "pro"', crowd: 'vip', reentry: 'again' } })).toEqual([]);
    expect(problems({ steps, entry: { event: 'signup', condition: 'event.data.plan ==' } })[0]).toMatch(
      /^null\/bad_condition: Workflow entry.condition is not a valid condition/,
    );
    expect(problems({ steps, entry: { event: 'signup', reentry: 'always' } })[0]).toMatch(/^null\/invalid_field: Workflow entry.reentry: /);
    expect(problems({ steps, entry: { event: '' } })[0]).toMatch(/^null\/invalid_field: Workflow entry.event: /);
    expect(problems({ steps, entry: { event: 'signup', crowd: '../x' } })[0]).toMatch(/^null\/invalid_field: Workflow entry.crowd: /);
    expect(problems({ steps, entry: { event: 'signup', when: 'now' } })[0]).toMatch(/^null\/invalid_field: Workflow entry: .*"when"/);
  });

  it('a trigger-only instance: users enter on their event as one bulk move per batch and partition, at most once (`once`)', async () => {
    h = await startHarness(2);
    const id = await settle(h, h.engine.startInstance(h.tenantId, await workflow(h, { steps, entry: { event: 'signup', reentry: 'once' } }), {}));
    expect(await counts(h, id)).toMatchObject({ total: 0, entered: 0 });

    await send(h, [
      { user: 1, type: 'purchase' }, // not in the instance yet: ignored
      { user: 1, type: 'signup' }, // enters; this event only lets them in
      { user: 1, type: 'purchase' }, // applies: after the entry
      { user: 2, type: 'signup' },
      { user: 2, type: 'signup' }, // already in
      { user: 3, type: 'purchase' }, // never signed up
      { user: 4, type: 'signup' },
    ]);
    expect(await stepUsers(h, id, 'wait')).toEqual([2, 4]);
    expect(await stepUsers(h, id, 'bought')).toEqual([1]);
    expect(await counts(h, id)).toMatchObject({ total: 3, entered: 3, edges: { 'wait->bought': 1 } });
    const rows = await entryRows(id);
    expect(rows.every((r) => r.fromStep === null && r.user === null)).toBe(true); // bitmap moves, never per user
    expect(rows.length).toBeLessThanOrEqual(h.partitions);
    expect(rows.flatMap((r) => RoaringBitmap32.deserialize(r.bitmap!, 'portable').toArray()).sort()).toEqual([1, 2, 4]);

    // `once`: users who were in the instance never enter again, wherever they are.
    await send(h, [
      { user: 1, type: 'signup' },
      { user: 2, type: 'signup' },
      { user: 5, type: 'signup' },
    ]);
    expect(await stepUsers(h, id, 'wait')).toEqual([2, 4, 5]);
    expect(await stepUsers(h, id, 'bought')).toEqual([1]);
    expect((await counts(h, id)).entered).toBe(4);
  });

  it('with a crowd start, a crowd and condition on the trigger, and re-entry `again` from exit steps; rebuilt by replay', async () => {
    h = await startHarness(2);
    await crowd(h, 'start', [10, 11]);
    await crowd(h, 'vip', [1, 2, 3, 10, 11]);
    const definition: WorkflowDefinition = { steps, entry: { event: 'signup', condition: 'event.data.plan == "pro"', crowd: 'vip', reentry: 'again' } };
    const id = await start(h, await workflow(h, definition), 'start');
    expect(await counts(h, id)).toMatchObject({ total: 2, entered: 2 });

    await send(h, [
      { user: 1, type: 'signup', data: { plan: 'free' } }, // condition false
      { user: 1, type: 'signup', data: { plan: 'pro' } }, // enters
      { user: 2, type: 'signup', data: { plan: 'pro' } },
      { user: 4, type: 'signup', data: { plan: 'pro' } }, // not in the trigger's crowd
      { user: 10, type: 'purchase' },
    ]);
    expect(await stepUsers(h, id, 'wait')).toEqual([1, 2, 11]);
    expect(await stepUsers(h, id, 'bought')).toEqual([10]);
    expect((await counts(h, id)).entered).toBe(4);

    await send(h, [
      { user: 10, type: 'signup', data: { plan: 'pro' } }, // rests in exit step `bought`: enters again
      { user: 11, type: 'signup', data: { plan: 'pro' } }, // still waiting: no
      { user: 2, type: 'purchase' },
    ]);
    expect(await stepUsers(h, id, 'wait')).toEqual([1, 10, 11]);
    expect(await stepUsers(h, id, 'bought')).toEqual([2]);
    const live = await counts(h, id);
    expect(live).toMatchObject({ total: 4, entered: 5, edges: { 'wait->bought': 2, 'bought->wait': 1 } });

    // Replay of the journal alone (a checkpoint the engine writes meanwhile holds the same), and a checkpoint, give the same steps and entries.
    const instance = h.engine.findRuntime(id)!;
    await db().shardCheckpoint.deleteMany({ where: { instanceId: id } });
    let entered = 0;
    for (let partition = 0; partition < h.partitions; partition++) {
      const { shard } = await loadShard(database(), h.tenantId, id, partition, instance.workflow);
      const kept = instance.shards[partition]!;
      for (const step of ['wait', 'bought']) expect(shard.step(step).toArray()).toEqual(kept.step(step).toArray());
      expect(shard.entered).toBe(kept.entered);
      expect(Shard.decode(id, partition, kept.encode()).entered).toBe(kept.entered);
      entered += shard.entered;
    }
    expect(entered).toBe(5);
  });

  it('a start without a crowd needs a trigger; a crowd update adds users to a trigger instance but takes none out', async () => {
    h = await startHarness(2);
    await expect(h.engine.startInstance(h.tenantId, await workflow(h, { steps }), {})).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringMatching(/^crowd: required, because version 1 of workflow ".*" has no entry trigger$/),
    });
    const id = await settle(h, h.engine.startInstance(h.tenantId, await workflow(h, { steps, entry: { event: 'signup', reentry: 'once' } }), {}));
    await send(h, [{ user: 1, type: 'signup' }]);
    await crowd(h, 'more', [7, 8]);
    await settle(h, h.engine.updateInstanceCrowd(h.tenantId, id, { crowd: 'more' }));
    expect(await stepUsers(h, id, 'wait')).toEqual([1, 7, 8]);
    expect((await counts(h, id)).entered).toBe(3);
  });
});
