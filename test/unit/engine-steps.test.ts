import { afterEach, describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import type { Step, WorkflowDefinition } from '../../core/model/workflow';
import { upsertProfiles } from '../../server/profiles/profiles';
import { db, database } from '../helpers/app-db';
import { advance, crowd, range, send, start, startHarness, stepUsers, steps, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness;
afterEach(async () => {
  await h.close();
});

async function journal(instanceId: string) {
  const rows = await db().journal.findMany({ where: { instanceId }, orderBy: { seq: 'asc' } });
  return rows.map((r) => ({
    from: r.fromStep,
    to: r.toStep,
    user: r.user === null ? null : Number(r.user),
    users: r.bitmap ? RoaringBitmap32.deserialize(r.bitmap, 'portable').toArray() : null,
    count: Number(r.count),
    leave: r.leaveAction,
    enter: r.enterAction,
  }));
}

/** Through the profiles module, as the API writes them, so the tenant's profile index sees the change. */
async function setProfile(user: number, attributes: Record<string, unknown>) {
  await upsertProfiles(database(), h.tenantId, [{ user, attributes }]);
}

describe('step kinds', () => {
  it('direct chains are followed at once, one move per hop, with enter/leave tags', async () => {
    h = await startHarness(1);
    const wf = await workflow(h, {
      steps: [
        { name: 'a', kind: 'direct', next: 'b', leaveAction: 'left-a' },
        { name: 'b', kind: 'direct', next: 'c', enterAction: 'hello-b' },
        {
          name: 'c',
          kind: 'branch',
          // Any event moves the user (a branch step reading no event would route users on entry).
          branches: [
            { condition: 'event.type != ""', next: 'd' },
            { condition: 'false', next: 'd' },
          ],
        },
        { name: 'd', kind: 'direct', enterAction: 'done' },
      ],
    });
    await crowd(h, 'c', [1, 2, 3]);
    const id = await start(h, wf, 'c');
    expect(await steps(h, id)).toEqual({ a: 0, b: 0, c: 3, d: 0 });
    await send(h, [{ user: 2, type: 'x' }]);
    expect(await journal(id)).toEqual([
      { from: null, to: 'a', user: null, users: [1, 2, 3], count: 3, leave: null, enter: null },
      { from: 'a', to: 'b', user: null, users: [1, 2, 3], count: 3, leave: 'left-a', enter: 'hello-b' },
      { from: 'b', to: 'c', user: null, users: [1, 2, 3], count: 3, leave: null, enter: null },
      { from: 'c', to: 'd', user: 2, users: null, count: 1, leave: null, enter: 'done' },
    ]);
    expect((await h.engine.getCounts(h.tenantId, id)).edges).toEqual({ 'a->b': 3, 'b->c': 3, 'c->d': 1 });
  });

  it('branch: the first true condition wins, in order; users outside the crowd are skipped', async () => {
    h = await startHarness(2);
    const wf = await workflow(h, {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "buy"', next: 'buyer' },
            { condition: 'event.type == "buy" && event.data.amount > 10', next: 'big' },
            { condition: 'event.data.amount > 100', next: 'big' },
            { condition: 'event.type == "view"', next: 'viewer' },
          ],
        },
        { name: 'buyer', kind: 'direct' },
        { name: 'big', kind: 'direct' },
        { name: 'viewer', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', [1, 2, 3, 4]);
    const id = await start(h, wf, 'c');
    await send(h, [
      { user: 1, type: 'buy', data: { amount: 50 } },
      { user: 2, type: 'view' },
      { user: 3, type: 'other', data: { amount: 500 } },
      { user: 4, type: 'other' },
      { user: 99, type: 'buy' },
      { user: 2, type: 'buy' }, // 2 already left the branch step: no second move
    ]);
    expect(await steps(h, id)).toEqual({ entry: 1, buyer: 1, big: 1, viewer: 1 });
    expect(await stepUsers(h, id, 'big')).toEqual([3]);
    expect(await stepUsers(h, id, 'entry')).toEqual([4]);
  });

  it('timer with a bitmap condition moves the matching users of the step as ONE bulk move; an empty step does nothing', async () => {
    h = await startHarness(1);
    const wf = await workflow(h, {
      steps: [
        { name: 'wait', kind: 'timer', cron: '0 * * * * *', condition: 'inCrowd("vip") || profile.tier == "gold"', next: 'done' },
        { name: 'done', kind: 'timer', cron: '30 * * * * *', next: 'end' },
        { name: 'end', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', range(1, 1000));
    await crowd(h, 'vip', range(1, 10));
    await setProfile(500, { tier: 'gold' });
    const id = await start(h, wf, 'c');
    await advance(h, 30_000); // 12:00:30 — the minute cron has not fired; `done` is empty so nothing happens
    expect(await steps(h, id)).toMatchObject({ wait: 1000, done: 0 });
    await advance(h, 30_000); // 12:01:00
    expect(await stepUsers(h, id, 'done')).toEqual([...range(1, 10), 500]);
    const rows = (await journal(id)).filter((r) => r.from === 'wait');
    expect(rows).toEqual([{ from: 'wait', to: 'done', user: null, users: [...range(1, 10), 500], count: 11, leave: null, enter: null }]);
    expect((await journal(id)).some((r) => r.from === 'done')).toBe(false); // it fired at 12:00:30, empty
  });

  it('timer with a per-user condition (no bitmap plan) moves only the users it holds for', async () => {
    h = await startHarness(3);
    const wf = await workflow(h, {
      steps: [
        { name: 'wait', kind: 'timer', cron: '0 0 * * * *', condition: 'user % 2 == 0', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', range(1, 20));
    const id = await start(h, wf, 'c');
    await advance(h, 3_600_000);
    expect(await stepUsers(h, id, 'done')).toEqual(range(1, 10).map((i) => i * 2));
  });

  it('delay: users move `after` their own entry, from time buckets, also across a clock jump', async () => {
    h = await startHarness(2);
    const wf = await workflow(h, {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "go"', next: 'wait' },
            { condition: 'false', next: 'done' },
          ],
        },
        { name: 'wait', kind: 'delay', after: '10m', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', [1, 2, 3]);
    const id = await start(h, wf, 'c');
    await send(h, [{ user: 1, type: 'go' }]);
    await advance(h, 6 * 60_000);
    await send(h, [{ user: 2, type: 'go' }]);
    await advance(h, 4 * 60_000 - 1); // user 1 waited 1 ms less than 10 minutes
    expect(await stepUsers(h, id, 'wait')).toEqual([1, 2]);
    await advance(h, 6_001); // 10 min + one 6 s bucket after user 1 entered
    expect(await stepUsers(h, id, 'done')).toEqual([1]);
    expect(await stepUsers(h, id, 'wait')).toEqual([2]);
    await h.clock.set(h.clock.now() + 3 * 3_600_000); // the clock jumps 3 hours
    await h.engine.runTimers();
    expect(await stepUsers(h, id, 'done')).toEqual([1, 2]);
    expect(await stepUsers(h, id, 'entry')).toEqual([3]);
  });

  it('split: deterministic per user, each path within 0.5% of its percent over 1M users', async () => {
    h = await startHarness(4);
    const definition: WorkflowDefinition = {
      steps: [
        {
          name: 'ab',
          kind: 'split',
          paths: [
            { percent: 10, next: 'a' },
            { percent: 30, next: 'b' },
            { percent: 60, next: 'c' },
          ],
        },
        { name: 'a', kind: 'direct' },
        { name: 'b', kind: 'direct' },
        { name: 'c', kind: 'direct' },
      ],
    };
    const wf = await workflow(h, definition);
    await crowd(h, 'c', range(1, 1_000_000));
    const id = await start(h, wf, 'c');
    const counts = await steps(h, id);
    expect(Math.abs(counts.a / 1e6 - 0.1)).toBeLessThan(0.005);
    expect(Math.abs(counts.b / 1e6 - 0.3)).toBeLessThan(0.005);
    expect(Math.abs(counts.c / 1e6 - 0.6)).toBeLessThan(0.005);
    expect(counts.a + counts.b + counts.c).toBe(1_000_000);
    // A copy of the workflow assigns independently (the hash is salted with the workflow id)…
    const armA = async (instanceId: string) => h.engine.stepBitmap(h.tenantId, instanceId, 'a');
    const copy = await start(h, await workflow(h, definition), 'c');
    expect((await armA(copy)).isEqual(await armA(id))).toBe(false);
    // …and two workflows whose splits name the same seed assign every user alike.
    const seeded: WorkflowDefinition = {
      steps: [{ ...(definition.steps[0] as Extract<Step, { kind: 'split' }>), seed: 'exp-1' }, ...definition.steps.slice(1)],
    };
    const [one, two] = [await start(h, await workflow(h, seeded), 'c'), await start(h, await workflow(h, seeded), 'c')];
    expect((await armA(one)).isEqual(await armA(two))).toBe(true);
    expect((await armA(one)).isEqual(await armA(id))).toBe(false);
  });

  it('parallel emits all its action tags at once, then moves on', async () => {
    h = await startHarness(1);
    const wf = await workflow(h, {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition: 'event.type != ""', next: 'fan' },
            { condition: 'false', next: 'end' },
          ],
        },
        { name: 'fan', kind: 'parallel', enterAction: 'fan-in', actions: ['email', 'sms'], leaveAction: 'fan-out', next: 'end' },
        { name: 'end', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', [7]);
    const id = await start(h, wf, 'c');
    await send(h, [{ user: 7, type: 'x' }]);
    expect((await journal(id)).slice(1)).toEqual([
      { from: 'entry', to: 'fan', user: 7, users: null, count: 1, leave: null, enter: 'fan-in,email,sms' },
      { from: 'fan', to: 'end', user: 7, users: null, count: 1, leave: 'fan-out', enter: null },
    ]);
  });

  it('ttl: an idle user is re-evaluated without an event, so a profile change alone moves them', async () => {
    h = await startHarness(2);
    const wf = await workflow(h, {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          ttl: '1h',
          branches: [
            { condition: 'profile.tier == "gold"', next: 'gold' },
            { condition: 'profile.score > 10', next: 'scored' },
          ],
        },
        { name: 'gold', kind: 'direct' },
        { name: 'scored', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', [1, 2, 3, 4]);
    const id = await start(h, wf, 'c');
    await setProfile(2, { tier: 'gold' });
    await advance(h, 30 * 60_000);
    expect(await stepUsers(h, id, 'gold')).toEqual([]);
    await advance(h, 31 * 60_000);
    expect(await stepUsers(h, id, 'gold')).toEqual([2]);
    await setProfile(3, { score: 50 });
    await advance(h, 61 * 60_000); // re-evaluated again one ttl later
    expect(await stepUsers(h, id, 'scored')).toEqual([3]);
    expect(await stepUsers(h, id, 'entry')).toEqual([1, 4]);
  });

  it('stopAt stops the instance by itself', async () => {
    h = await startHarness(1);
    const stopAt = new Date(h.clock.now() + 24 * 3_600_000).toISOString();
    const wf = await workflow(h, { steps: [{ name: 'only', kind: 'direct' }], stopAt });
    await crowd(h, 'c', [1, 2]);
    const id = await start(h, wf, 'c');
    await advance(h, 24 * 3_600_000);
    const stopId = `instance.stop:${id}:stopAt`;
    await expect.poll(() => h.runner.get(stopId), { timeout: 10_000 }).not.toBeNull();
    const procedure = await h.runner.await(stopId, 30_000);
    expect(procedure.state).toBe('done');
    expect((await h.engine.getInstance(h.tenantId, id)).state).toBe('stopped');
    expect((await h.engine.getSnapshot(h.tenantId, id)).counts.steps).toEqual({ only: 2 });
  });
});
