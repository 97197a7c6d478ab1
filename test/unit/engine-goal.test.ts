import { afterEach, describe, expect, it } from 'vitest';
import { loadShard } from '../../server/engine/recovery';
import { validateWorkflow } from '../../core/model/validate';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { db, database } from '../helpers/app-db';
import { crowd, range, restartEngine, send, settle, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Users wait; a click moves them to `clicked`; a purchase ends the journey. The goal: a purchase of 10 or more. */
const definition: WorkflowDefinition = {
  steps: [
    {
      name: 'wait',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "purchase"', next: 'bought' },
        { condition: 'event.type == "click"', next: 'clicked' },
      ],
    },
    { name: 'clicked', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }], timeout: { after: '1d', next: 'bought' } },
    { name: 'bought', kind: 'direct' },
  ],
  goal: { condition: 'event.type == "purchase" && event.data.amount >= 10' },
};

const purchase = (user: number, amount: number) => ({ user, type: 'purchase', data: { amount } });

describe('workflow goal (conversions)', () => {
  it('validates the goal condition', () => {
    const problems = (goal: unknown) => {
      const result = validateWorkflow({ ...definition, goal }, { now: 0 });
      return result.ok ? [] : result.problems.map((p) => `${p.step}/${p.code}: ${p.message}`);
    };
    expect(problems(definition.goal)).toEqual([]);
    expect(problems({ condition: 'event.type ==' })[0]).toMatch(/^null\/bad_condition: Workflow goal.condition is not a valid condition/);
    expect(problems({})[0]).toMatch(/^null\/invalid_field: Workflow goal.condition: /);
  });

  it('counts each user once, from the step the goal event found them in; exports them; rebuilt from checkpoint + rows; kept at stop', async () => {
    h = await startHarness(2);
    await crowd(h, 'c', range(1, 6));
    const id = await start(h, await workflow(h, definition), 'c');
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ converted: 0, convertedFrom: {} });

    await send(h, [{ user: 1, type: 'click' }, purchase(2, 20), purchase(1, 20), purchase(3, 5), { user: 4, type: 'view' }, purchase(99, 50)]);
    expect(await stepUsers(h, id, 'bought')).toEqual([1, 2, 3]);
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ converted: 2, convertedFrom: { wait: 1, clicked: 1 } });

    // Users convert wherever they rest (3, in the end step), and only once (2).
    await send(h, [purchase(2, 50), purchase(3, 50)]);
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ converted: 3, convertedFrom: { wait: 1, clicked: 1, bought: 1 } });
    expect((await h.engine.stepBitmap(h.tenantId, id, 'clicked', 'converted')).toArray()).toEqual([1]);
    expect((await h.engine.stepBitmap(h.tenantId, id, 'bought', 'converted')).toArray()).toEqual([3]);

    // What recovery reads (checkpoint + conversion rows, whichever holds them now) is what the engine holds.
    const instance = h.engine.findRuntime(id)!;
    const converted = async () => {
      const out: Record<string, number[]> = {};
      for (let partition = 0; partition < h!.partitions; partition++) {
        const { shard } = await loadShard(database(), h!.tenantId, id, partition, instance.workflow);
        for (const [step, users] of shard.converted) out[step] = [...(out[step] ?? []), ...users.toArray()].sort();
      }
      return out;
    };
    expect(await converted()).toEqual({ wait: [2], clicked: [1], bought: [3] });
    // A checkpoint takes the rows in.
    await expect.poll(async () => db().conversion.count({ where: { instanceId: id } }), { timeout: 15_000 }).toBe(0);
    expect(await converted()).toEqual({ wait: [2], clicked: [1], bought: [3] });

    await restartEngine(h);
    await send(h, [purchase(5, 10)]);
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ converted: 4, convertedFrom: { wait: 2, clicked: 1, bought: 1 } });

    await settle(h, h.engine.stopInstance(h.tenantId, id));
    expect((await h.engine.getCounts(h.tenantId, id)).convertedFrom).toEqual({ wait: 2, clicked: 1, bought: 1 });
    expect((await h.engine.stepBitmap(h.tenantId, id, 'wait', 'converted')).toArray()).toEqual([2, 5]);
    expect(await db().conversion.count({ where: { instanceId: id } })).toBe(0);
  });
});
