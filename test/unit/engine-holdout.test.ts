// Holdout groups (issue 37 §4) through a real engine and the webhook cut: a journey holding out 20% of its users,
// whose entry step and purchase step name a webhook. Held-out users move and convert like everyone else but no
// delivery carries them; the others get theirs. The groups survive a restart (checkpoint + journal replay) and a
// stop (snapshot), and each group's users export on their own.
import { afterEach, describe, expect, it } from 'vitest';
import { db, database } from '../helpers/app-db';
import { commitRound, cutRound, DecodedMoves } from '../../server/webhooks/cut';
import { createDestination, requireDestination } from '../../server/webhooks/destinations';
import { crowd, range, restartEngine, send, settle, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';
import type { WorkflowDefinition } from '../../core/model/workflow';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const USERS = range(1, 3000);
const definition: WorkflowDefinition = {
  steps: [
    { name: 'welcome', kind: 'direct', enterAction: 'webhook:crm', next: 'wait' },
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'thanks' }] },
    { name: 'thanks', kind: 'direct', enterAction: 'webhook:crm' },
  ],
  goal: { condition: 'event.type == "purchase"' },
  holdout: { percent: 20 },
};

/** Cuts every round the journal holds for the destination; returns the users each delivered move carried, by step. */
async function deliveredByStep(tenantId: string): Promise<Record<string, number[]>> {
  const decoded = new DecodedMoves(database());
  for (;;) {
    const row = await requireDestination(database(), tenantId, 'crm');
    const round = await cutRound(database(), row, 'tenant', h!.clock.now(), decoded, 1000);
    if (round.readRows === 0 && round.deliveries.length === 0) break;
    expect(await commitRound(database(), row, round)).toBe(true);
  }
  const destination = await requireDestination(database(), tenantId, 'crm');
  const out: Record<string, number[]> = {};
  for (const delivery of await db().webhookDelivery.findMany({ where: { destinationId: destination.id } }))
    for (const move of JSON.parse(delivery.body).moves as { to: string; users: number[] }[]) (out[move.to] ??= []).push(...move.users);
  for (const users of Object.values(out)) users.sort((a, b) => a - b);
  return out;
}

describe('holdout groups', () => {
  it('hold out a fifth of entering users: they move and convert, get no deliveries, and the rest get theirs', async () => {
    h = await startHarness(2);
    await createDestination(
      database(),
      h.tenantId,
      { name: 'crm', url: 'https://receiver.example/hook', headers: {}, batchSize: 500, timeoutMs: 5_000, allNotifications: false, start: 'head' },
      h.clock.now(),
    );
    await crowd(h, 'c', USERS);
    const id = await start(h, await workflow(h, definition), 'c');

    const holdout = (await h.engine.stepBitmap(h.tenantId, id, 'wait', 'in', 'holdout')).toArray();
    const treated = (await h.engine.stepBitmap(h.tenantId, id, 'wait', 'in', 'treatment')).toArray();
    expect(holdout.length + treated.length).toBe(USERS.length);
    expect(holdout.filter((u) => treated.includes(u))).toEqual([]);
    // 20% of 3,000 is 600, with a binomial standard deviation of ~22: a hash far from a fifth would show here.
    expect(holdout.length).toBeGreaterThan(600 - 4 * 22);
    expect(holdout.length).toBeLessThan(600 + 4 * 22);

    // Everyone entered the step with the webhook; only the treated users were sent it.
    expect((await deliveredByStep(h.tenantId)).welcome).toEqual(treated);

    // Purchases by held-out and treated users alike: all move on and convert (from `wait`, where the goal found them);
    // single moves of held-out users send nothing.
    const buyers = [...holdout.slice(0, 30), ...treated.slice(0, 70)];
    await send(
      h,
      buyers.map((user) => ({ user, type: 'purchase' })),
    );
    expect(await stepUsers(h, id, 'thanks')).toEqual([...buyers].sort((a, b) => a - b));
    expect((await deliveredByStep(h.tenantId)).thanks).toEqual(treated.slice(0, 70));
    const counts = await h.engine.getCounts(h.tenantId, id);
    expect(counts).toMatchObject({ entered: 3000, converted: 100, holdout: { entered: holdout.length, converted: 30 } });
    expect((await h.engine.stepBitmap(h.tenantId, id, 'wait', 'converted', 'holdout')).toArray()).toEqual(holdout.slice(0, 30));

    // Rebuilt from the checkpoint and journal: the same groups, the same counts; a later purchase counts in its group.
    await restartEngine(h);
    expect((await h.engine.stepBitmap(h.tenantId, id, 'wait', 'in', 'holdout')).toArray()).toEqual(holdout.slice(30));
    await send(h, [{ user: holdout[40], type: 'purchase' }]);
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ converted: 101, holdout: { entered: holdout.length, converted: 31 } });
    expect((await deliveredByStep(h.tenantId)).thanks).toEqual(treated.slice(0, 70));

    // Kept at stop: the snapshot's counts and group exports.
    await settle(h, h.engine.stopInstance(h.tenantId, id));
    expect(await h.engine.getCounts(h.tenantId, id)).toMatchObject({ converted: 101, holdout: { entered: holdout.length, converted: 31 } });
    expect((await h.engine.stepBitmap(h.tenantId, id, 'thanks', 'in', 'holdout')).toArray()).toEqual(
      [...holdout.slice(0, 30), holdout[40]].sort((a, b) => a - b),
    );
  });

  it('holds out the same users in every instance of the journey, and other users in another journey', async () => {
    h = await startHarness(2);
    await crowd(h, 'c', USERS);
    const workflowId = await workflow(h, definition);
    const first = await start(h, workflowId, 'c');
    const group = async (id: string) => (await h!.engine.stepBitmap(h!.tenantId, id, 'wait', 'in', 'holdout')).toArray();
    const held = await group(first);
    await settle(h, h.engine.stopInstance(h.tenantId, first));
    const again = await settle(h, h.engine.startInstance(h.tenantId, workflowId, { crowd: 'c', reentry: 'allow' }));
    expect(await group(again)).toEqual(held);
    const other = await start(h, await workflow(h, definition), 'c');
    const otherHeld = await group(other);
    expect(otherHeld).not.toEqual(held);
    // A shared seed holds out the same users in any journey.
    const seeded = { ...definition, holdout: { percent: 20, seed: 'q4-control' } };
    const [a, b] = [await start(h, await workflow(h, seeded), 'c'), await start(h, await workflow(h, seeded), 'c')];
    expect(await group(a)).toEqual(await group(b));
  });
});
